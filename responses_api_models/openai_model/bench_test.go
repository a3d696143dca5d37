package openaimodel

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
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

// BenchmarkAddedLatency sends requests one at a time, in turn straight to
// a fake upstream, through gym, and through a bare httputil.ReverseProxy
// (the floor: what any extra Go HTTP hop costs on this machine). It
// reports each latency distribution and what gym and the bare proxy add
// (differences of the percentiles).
func BenchmarkAddedLatency(b *testing.B) {
	up := benchUpstream(b, 0)
	urls := []string{up + "/responses", startGym(b, up) + "/ng-rollout/1-0/v1/responses", bareProxy(b, up) + "/v1/responses"}
	c := benchClient(4)
	for _, u := range urls { // warm connections
		if err := call(c, u); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([][]time.Duration, len(urls))
	for b.Loop() {
		for i, u := range urls {
			t0 := time.Now()
			if err := call(c, u); err != nil {
				b.Fatal(err)
			}
			lat[i] = append(lat[i], time.Since(t0))
		}
	}
	dp50, dp99 := percentiles(lat[0])
	gp50, gp99 := percentiles(lat[1])
	pp50, pp99 := percentiles(lat[2])
	b.ReportMetric(us(dp50), "direct-p50-µs")
	b.ReportMetric(us(dp99), "direct-p99-µs")
	b.ReportMetric(us(gp50), "gym-p50-µs")
	b.ReportMetric(us(gp99), "gym-p99-µs")
	b.ReportMetric(us(gp50-dp50), "gym-added-p50-µs")
	b.ReportMetric(us(gp99-dp99), "gym-added-p99-µs")
	b.ReportMetric(us(pp50-dp50), "bare-proxy-added-p50-µs")
	b.ReportMetric(us(pp99-dp99), "bare-proxy-added-p99-µs")
	b.ReportMetric(0, "ns/op") // three requests per op; the percentiles say it all
}

// BenchmarkThroughput runs 256 concurrent clients straight against a fake
// upstream, through gym, and through a bare httputil.ReverseProxy (the
// floor of any extra Go hop), with an upstream that answers at once (so
// clients, proxy and upstream all compete for the same CPUs and the extra
// hop shows as CPU) and one that takes 100 ms, like a (very fast) model,
// where the proxy must simply keep up.
func BenchmarkThroughput(b *testing.B) {
	const clients = 256
	for _, delay := range []time.Duration{0, 100 * time.Millisecond} {
		up := benchUpstream(b, delay)
		urls := map[string]string{
			"direct":     up + "/responses",
			"gym":        startGym(b, up) + "/v1/responses",
			"bare-proxy": bareProxy(b, up) + "/v1/responses",
		}
		for _, via := range []string{"direct", "gym", "bare-proxy"} {
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

// bareProxy serves httputil.ReverseProxy in front of upstream (a base URL
// ending in /v1) at <its URL>/v1.
func bareProxy(b *testing.B, upstream string) string {
	b.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 1024}
	srv := httptest.NewServer(http.StripPrefix("/v1", rp))
	b.Cleanup(srv.Close)
	return srv.URL
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(ds)
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
