package profile

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestZZMem(t *testing.T) {
	dir := os.Getenv("MEMDIR")
	per, _ := strconv.Atoi(os.Getenv("PER"))
	n := 100000
	text := strings.Repeat("lorem ipsum dolor sit amet ", 80)
	in, _ := os.Create(dir + "/inputs.jsonl")
	out, _ := os.Create(dir + "/rollouts.jsonl")
	iw, ow := bufio.NewWriter(in), bufio.NewWriter(out)
	for i := 0; i < n; i++ {
		task, r := i/per, i%per
		fmt.Fprintf(iw, `{"_ng_task_index":%d,"_ng_rollout_index":%d,"responses_create_params":{"input":[{"role":"user","content":"%s"}]},"expected_answer":"%d","agent_ref":{"name":"agent_%d"}}`+"\n", task, r, text, i%7, task%3)
	}
	for i := n - 1; i >= 0; i-- {
		task, r := i/per, i%per
		fmt.Fprintf(ow, `{"_ng_task_index":%d,"_ng_rollout_index":%d,"responses_create_params":{"input":[{"role":"user","content":"%s"}]},"response":{"id":"r","output":[{"type":"message","content":[{"type":"output_text","text":"%s %s"}]}],"usage":{"input_tokens":%d,"output_tokens":%d,"total_tokens":%d,"input_tokens_details":{"cached_tokens":0}}},"reward":%d.0,"extracted_answer":"%c","library_reward":%d.0,"agent_ref":{"name":"agent_%d"}}`+"\n",
			task, r, text, text, text, 200+i%50, 1000+i%700, 1200+i%750, i%3%2, 'A'+i%4, i%2, task%3)
	}
	iw.Flush(); ow.Flush(); in.Close(); out.Close()
	runtime.GC()
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	s, err := Run(context.Background(), Options{InputsPath: dir + "/inputs.jsonl", RolloutsPath: dir + "/rollouts.jsonl", Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fi, _ := os.Stat(dir + "/rollouts.jsonl")
	fmt.Printf("per=%d rollouts file %d MB; run %v; maxrss before %d MB after %d MB; heap sys %d MB; %+v\n", per, fi.Size()>>20, time.Since(start), before.Maxrss>>10, ru.Maxrss>>10, ms.HeapSys>>20, *s)
}
