// Command rundriver drives POST /run on a gym agent with dataset rows, from
// a fixed number of concurrent clients for a fixed time per level, and
// reports rollouts per second and latency. Each request is one row with
// _ng_task_index (the row's index) and _ng_rollout_index (how many times
// that row was sent before), as rollout collection stamps them.
//
//	rundriver -url http://127.0.0.1:13441 -rows example.jsonl -concurrency 64,256 -duration 10s
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	url := flag.String("url", "", "the agent's base URL (its /run is driven)")
	rowsPath := flag.String("rows", "", "dataset rows, one JSON object per line")
	levels := flag.String("concurrency", "64,256", "comma-separated numbers of concurrent clients, one run each")
	duration := flag.Duration("duration", 10*time.Second, "how long each level is measured")
	warmup := flag.Duration("warmup", time.Second, "how long each level runs before it is measured")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *url, *rowsPath, *levels, *duration, *warmup, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rundriver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url, rowsPath, levels string, duration, warmup time.Duration, out io.Writer) error {
	if url == "" || rowsPath == "" {
		return errors.New("-url and -rows are required")
	}
	rows, err := readRows(rowsPath)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil || c < 1 {
			return fmt.Errorf("-concurrency: %q is not a positive number", l)
		}
		d := &driver{url: strings.TrimRight(url, "/") + "/run", rows: rows, counts: make([]atomic.Int64, len(rows)),
			client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, DisableCompression: true}}}
		if _, err := d.level(ctx, c, warmup); err != nil {
			return fmt.Errorf("warming up %d clients: %w", c, err)
		}
		cpu0 := cpuTime()
		r, err := d.level(ctx, c, duration)
		if err != nil {
			return fmt.Errorf("%d clients: %w", c, err)
		}
		fmt.Fprintf(out, "clients %4d: %7d rollouts in %.1f s = %7.0f rollouts/s   latency p50 %.1f ms, p99 %.1f ms\n",
			c, r.done, r.elapsed.Seconds(), float64(r.done)/r.elapsed.Seconds(), ms(r.p50), ms(r.p99))
		fmt.Fprintf(out, "    %-40s %6.3f CPU s per 1000 rollouts\n", "rundriver (this client)", (cpuTime()-cpu0).Seconds()*1000/float64(r.done))
	}
	return nil
}

// readRows returns each non-blank line of a JSONL file without its closing
// brace, ready for the indices to be appended.
func readRows(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' || line[len(line)-1] != '}' {
			return nil, fmt.Errorf("%s:%d: not a JSON object", path, n)
		}
		rows = append(rows, bytes.Clone(line[:len(line)-1]))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s holds no rows", path)
	}
	return rows, nil
}

type driver struct {
	url    string
	rows   [][]byte
	counts []atomic.Int64 // rollouts sent per row, the next rollout index
	next   atomic.Int64
	client *http.Client
}

type result struct {
	done     int
	elapsed  time.Duration
	p50, p99 time.Duration
}

// level runs c clients for d and stops at the first failed rollout.
func (dr *driver) level(ctx context.Context, c int, d time.Duration) (result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	deadline := time.Now().Add(d)
	latencies := make([][]time.Duration, c)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range c {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				if err := dr.rollout(ctx); err != nil {
					cancel(err)
					return
				}
				latencies[w] = append(latencies[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return result{}, err
	}
	all := slices.Concat(latencies...)
	if len(all) == 0 {
		return result{}, errors.New("no rollout finished")
	}
	slices.Sort(all)
	return result{done: len(all), elapsed: elapsed, p50: all[len(all)/2], p99: all[len(all)*99/100]}, nil
}

func (dr *driver) rollout(ctx context.Context) error {
	task := int(dr.next.Add(1)-1) % len(dr.rows)
	index := dr.counts[task].Add(1) - 1
	body := make([]byte, 0, len(dr.rows[task])+64)
	body = append(body, dr.rows[task]...)
	body = append(body, `,"_ng_task_index":`...)
	body = strconv.AppendInt(body, int64(task), 10)
	body = append(body, `,"_ng_rollout_index":`...)
	body = strconv.AppendInt(body, index, 10)
	body = append(body, '}')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dr.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := dr.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the /run answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"reward"`)) {
		return fmt.Errorf("/run of row %d: HTTP %d: %.500s", task, resp.StatusCode, out)
	}
	return nil
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
