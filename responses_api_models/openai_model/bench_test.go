package openaimodel

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchRequest is a typical agent turn: a short conversation with a tool.
var benchRequest = []byte(`{"model":"policy","input":[` +
	`{"type":"message","role":"developer","content":"You are a helpful assistant. Use the tools when they help."},` +
	`{"type":"message","role":"user","content":"` + strings.Repeat("What is the weather in Paris today? ", 12) + `"},` +
	`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
	`{"type":"function_call_output","call_id":"call_1","output":"{\"temp_c\":18,\"sky\":\"clear\"}"}],` +
	`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}],` +
	`"temperature":0.6,"max_output_tokens":1024}`)

// benchUpstream answers every call with the canned Responses answer after
// delay, recording nothing, so only HTTP work is measured.
func benchUpstream(b *testing.B, delay time.Duration) string {
	b.Helper()
	answer := []byte(responsesAnswer)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if delay > 0 {
			time.Sleep(delay)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func benchClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, DisableCompression: true}}
}

func call(c *http.Client, url string) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader(benchRequest))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// BenchmarkAddedLatency alternates one request straight to a fake upstream
// and one through gym, one at a time, and reports both latency
// distributions and what gym adds (difference of the percentiles).
func BenchmarkAddedLatency(b *testing.B) {
	up := benchUpstream(b, 0)
	gym := startGym(b, up) + "/ng-rollout/1-0/v1/responses"
	direct := up + "/responses"
	c := benchClient(4)
	for _, u := range []string{direct, gym} { // warm connections
		if err := call(c, u); err != nil {
			b.Fatal(err)
		}
	}
	var d, g []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := call(c, direct); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := call(c, gym); err != nil {
			b.Fatal(err)
		}
		d, g = append(d, t1.Sub(t0)), append(g, time.Since(t1))
	}
	dp50, dp99 := percentiles(d)
	gp50, gp99 := percentiles(g)
	b.ReportMetric(us(dp50), "direct-p50-µs")
	b.ReportMetric(us(dp99), "direct-p99-µs")
	b.ReportMetric(us(gp50), "gym-p50-µs")
	b.ReportMetric(us(gp99), "gym-p99-µs")
	b.ReportMetric(us(gp50-dp50), "added-p50-µs")
	b.ReportMetric(us(gp99-dp99), "added-p99-µs")
	b.ReportMetric(0, "ns/op") // a pair of requests per op says nothing alone
}

// BenchmarkThroughput runs 256 concurrent clients straight against a fake
// upstream and through gym, with an upstream that answers at once (all
// HTTP work competes for the same CPUs) and one that takes 20 ms, like a
// fast model.
func BenchmarkThroughput(b *testing.B) {
	const clients = 256
	for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
		up := benchUpstream(b, delay)
		urls := map[string]string{"direct": up + "/responses", "gym": startGym(b, up) + "/v1/responses"}
		for _, via := range []string{"direct", "gym"} {
			// One client across the benchmark's rounds, so that rounds after
			// the first run on warm connections.
			c := benchClient(clients)
			b.Run("upstream="+delay.String()+"/"+via, func(b *testing.B) {
				b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := call(c, urls[via]); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			})
		}
	}
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(ds)
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
