package openaimodel

import (
	"bufio"
	"bytes"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	inflightGym    = flag.String("inflight.gym", "", "a gym binary to run TestInflight against (bench/model_inflight.sh builds one)")
	inflightN      = flag.Int("inflight.n", 10000, "TestInflight: requests held in flight at once")
	inflightMaxRSS = flag.Int("inflight.max-rss-mb", 500, "TestInflight: the gym process's peak RSS allowed, in MiB")
	inflightHTTP1  = flag.Bool("inflight.http1", false, "TestInflight: a plain HTTP/1.1 upstream (a local vLLM, say), which needs a connection per request")
)

// TestInflight holds -inflight.n requests in flight at once through a real
// `gym serve` process to a slow upstream, then lets them all finish, and
// reports the gym process's peak RSS (VmHWM). The upstream is TLS with
// HTTP/2, as hosted endpoints are (or, with -inflight.http1, plain
// HTTP/1.1), and answers only once every request has arrived, so all of
// them are provably in flight together.
func TestInflight(t *testing.T) {
	if *inflightGym == "" {
		t.Skip("run by bench/model_inflight.sh (set -inflight.gym to a gym binary)")
	}
	n := *inflightN
	var arrived atomic.Int64
	release := make(chan struct{})
	var releaseOnce sync.Once
	answer := []byte(responsesAnswer)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if arrived.Add(1) == int64(n) {
			releaseOnce.Do(func() { close(release) })
		}
		select {
		case <-release:
		case <-time.After(time.Minute): // some request failed to arrive
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	if *inflightHTTP1 {
		up.Start()
	} else {
		up.EnableHTTP2 = true
		up.StartTLS()
	}
	defer up.Close()
	defer releaseOnce.Do(func() { close(release) })

	dir := t.TempDir()
	certFile := filepath.Join(dir, "upstream.pem")
	if up.TLS != nil {
		if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	config := fmt.Sprintf("policy_model:\n  responses_api_models:\n    openai_model:\n      entrypoint: app.py\n      host: 127.0.0.1\n      port: %d\n"+
		"      openai_base_url: %s/v1\n      openai_api_key: sk-bench\n      openai_model: served-model\n", port, up.URL)
	cmd := exec.Command(*inflightGym, "serve")
	cmd.Env = append(os.Environ(), "NEMO_GYM_CONFIG_DICT="+config, "NEMO_GYM_CONFIG_PATH=policy_model",
		// Trust the fake upstream's certificate, as a real one is trusted.
		"SSL_CERT_FILE="+certFile)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	lines := bufio.NewScanner(out)
	for lines.Scan() && !strings.Contains(lines.Text(), "listening on") {
		t.Log(lines.Text())
	}
	go io.Copy(io.Discard, out)
	pid := cmd.Process.Pid
	base := "http://127.0.0.1:" + strconv.Itoa(port) + "/v1/responses"
	idle, _ := memStatus(pid)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}}
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		// Ramp up in steps so the listen backlog (somaxconn) is not flooded.
		if i%500 == 499 {
			time.Sleep(20 * time.Millisecond)
		}
		wg.Go(func() {
			path := strings.Replace(base, "/v1/", "/ng-rollout/"+strconv.Itoa(i)+"-0/v1/", 1)
			resp, err := client.Post(path, "application/json", bytes.NewReader(benchRequest))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != 200 {
					err = fmt.Errorf("HTTP %d", resp.StatusCode)
				}
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			ok.Add(1)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(3 * time.Minute)
	released := (<-chan struct{})(release)
	var peakRSS int64
wait:
	for {
		select {
		case <-released:
			released = nil
			_, rss := memStatus(pid)
			t.Logf("all %d requests in flight at the upstream after %v; gym RSS %d MiB", n, time.Since(start).Round(time.Millisecond), rss>>20)
		case <-done:
			break wait
		case <-tick.C:
		case <-deadline:
			t.Fatalf("stuck: %d arrived upstream, %d ok, %d failed", arrived.Load(), ok.Load(), failed.Load())
		}
		if _, rss := memStatus(pid); rss > peakRSS {
			peakRSS = rss
		}
	}
	hwm, _ := memStatus(pid)
	t.Logf("completed %d of %d (%d failed) in %v", ok.Load(), n, failed.Load(), time.Since(start).Round(time.Millisecond))
	t.Logf("gym RSS: idle %d MiB, peak sampled %d MiB, VmHWM %d MiB (%.1f KiB per in-flight request)",
		idle>>20, peakRSS>>20, hwm>>20, float64(hwm-idle)/1024/float64(n))
	if failed.Load() > 0 {
		t.Errorf("%d requests failed; first: %v", failed.Load(), firstErr.Load())
	}
	if hwm > int64(*inflightMaxRSS)<<20 {
		t.Errorf("peak RSS %d MiB is over the %d MiB target", hwm>>20, *inflightMaxRSS)
	}
}

// memStatus reads a process's peak and current resident set sizes, in bytes.
func memStatus(pid int) (hwm, rss int64) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, val, _ := strings.Cut(line, ":")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmHWM":
			hwm = kb << 10
		case "VmRSS":
			rss = kb << 10
		}
	}
	return hwm, rss
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
