package replaymodel

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/capture"
	"github.com/nemo-gym-go/gym/internal/modelserver"
	"github.com/nemo-gym-go/gym/internal/server"
)

// secondTurn is the second model call of a recorded example rollout, as
// simple_agent sends it: the task's input, the function call and the Go
// tool's output.
func secondTurn(b *testing.B) []byte {
	rec := readJSONL(b, exampleRollouts)[3]
	body := rec.Get("responses_create_params").Raw
	body = must(sjson.SetRaw(body, "input.-1", rec.Get("response.output.0").Raw))
	body = must(sjson.SetRaw(body, "input.-1", `{"type":"function_call_output","call_id":"call_InsFzlr0gt1hNYb3vvavZcrF","output":"{\"city\":\"San Francisco\",\"weather_description\":\"The weather in San Francisco is cold.\"}"}`))
	return []byte(body)
}

// BenchmarkLookup is the backend's work for one call: hashing the input
// and finding the recorded turn.
func BenchmarkLookup(b *testing.B) {
	rt := runtimeFor(b, io.Discard, pathLine(exampleRollouts))
	be, err := newBackend(b.Context(), rt, files{lookupEnv: noEnv, cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	body := secondTurn(b)
	b.ReportAllocs()
	for b.Loop() {
		res, err := be.Responses(b.Context(), body, modelserver.CallInfo{})
		if err != nil || res.Status != 0 {
			b.Fatal(err, res.Status)
		}
	}
}

// BenchmarkServer runs 256 concurrent clients against the server over
// HTTP, as a busy agent calls it; captured, each call is a rollout's, with
// model-call capture on (observability_enabled).
func BenchmarkServer(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchServer(b, false) })
	b.Run("captured", func(b *testing.B) { benchServer(b, true) })
}

func benchServer(b *testing.B, captured bool) {
	const clients = 256
	rt := runtimeFor(b, io.Discard, pathLine(exampleRollouts))
	be, err := newBackend(b.Context(), rt, files{lookupEnv: noEnv, cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	h := modelserver.Handler(be, rt.Logger)
	path := "/v1/responses"
	if captured {
		store, err := capture.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		h = (&capture.Recorder{Store: store, Server: rt.Instance}).Wrap(h)
	}
	srv := httptest.NewServer(server.Wrap(rt, h))
	b.Cleanup(srv.Close)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
	body := secondTurn(b)
	var rollout atomic.Int64
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			url := srv.URL + path
			if captured {
				url = srv.URL + "/ng-rollout/" + strconv.FormatInt(rollout.Add(1), 10) + "-0" + path
			}
			resp, err := c.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("HTTP %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkRollouts runs whole rollouts through the real simple_agent and
// example_single_tool_call in this process, 64 clients at a time, so that
// a CPU profile shows where a rollout's time goes across all three servers
// and the client.
func BenchmarkRollouts(b *testing.B) {
	const clients = 64
	url := startEnvironment(b, exampleRollouts) + "/run"
	rows := readJSONL(b, exampleRows)
	var next atomic.Int64
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			body := must(sjson.Set(rows[n%int64(len(rows))].Raw, "_ng_task_index", n%int64(len(rows))))
			body = must(sjson.Set(body, "_ng_rollout_index", n))
			resp, err := c.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("HTTP %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rollouts/s")
}
