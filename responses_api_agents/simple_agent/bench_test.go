package simpleagent

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRun measures what the agent adds to a rollout: /run against
// in-process fakes that answer at once, 64 rollouts in flight. Each rollout
// is six HTTP exchanges on loopback (the /run call, /seed_session, two
// model calls, one tool call, /verify); the /v1/responses self-call is made
// in process.
func BenchmarkRun(b *testing.B) {
	for _, tc := range []struct {
		name   string
		global string
	}{
		{"plain", ""},
		{"rollout_correlation", "rollout_correlation: true"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := startHarness(b, options{global: tc.global, script: weatherScript, discard: true})
			const concurrency = 64
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency, MaxConnsPerHost: concurrency}}
			defer client.CloseIdleConnections()
			var next, failed atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range concurrency {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						resp, err := client.Post(h.agentURL+"/run", "application/json", strings.NewReader(weatherRow))
						if err != nil {
							failed.Add(1)
							continue
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d rollouts failed", n, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rollouts/s")
		})
	}
}
