package replaymodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/modelserver"
	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

// Recordings the tests replay, from the repository's built-in data.
var (
	exampleRollouts = repoFile("resources_servers/example_single_tool_call/data/example_rollouts.jsonl")
	exampleRows     = repoFile("resources_servers/example_single_tool_call/data/example.jsonl")
	mathRollouts    = repoFile("resources_servers/math_with_judge/data/example_rollouts.jsonl")
	rulerRollouts   = repoFile("resources_servers/ruler/data/example_rollouts.jsonl")
	reasoningFile   = must(filepath.Abs("testdata/reasoning_rollouts.jsonl"))
)

func repoFile(rel string) string { return must(filepath.Abs(filepath.Join("..", "..", rel))) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// runtimeFor is the runtime `gym serve` builds for instance policy_model
// whose section holds lines (YAML, one key per line).
func runtimeFor(t testing.TB, logs io.Writer, lines ...string) *server.Runtime {
	t.Helper()
	yaml := "policy_model:\n  responses_api_models:\n    replay_model:\n      host: 127.0.0.1\n      port: 0\n"
	for _, l := range lines {
		yaml += "      " + l + "\n"
	}
	rt, err := servertest.Runtime(yaml, "policy_model")
	if err != nil {
		t.Fatal(err)
	}
	rt.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return rt
}

// pathLine is a rollouts_jsonl_fpath config line.
func pathLine(paths ...string) string {
	if len(paths) == 1 {
		return "rollouts_jsonl_fpath: " + string(must(json.Marshal(paths[0])))
	}
	return "rollouts_jsonl_fpath: " + string(must(json.Marshal(paths)))
}

// startReplay serves the replay model as a client sees it, behind the
// common middleware; logs collect what it logs.
func startReplay(t testing.TB, lines ...string) (url string, logs *syncBuffer) {
	t.Helper()
	logs = &syncBuffer{}
	rt := runtimeFor(t, logs, lines...)
	b, err := newBackend(t.Context(), rt, files{lookupEnv: noEnv, cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Wrap(rt, modelserver.Handler(b, rt.Logger)))
	t.Cleanup(srv.Close)
	return srv.URL, logs
}

func noEnv(string) (string, bool) { return "", false }

// post sends body to url and returns the status and response body.
func post(t testing.TB, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(out)
}

// readJSONL returns the lines of a JSONL file.
func readJSONL(t testing.TB, path string) []gjson.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []gjson.Result
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			rows = append(rows, gjson.ParseBytes(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// episode is what drive saw: each model answer and the items it added.
type episode struct {
	answers []gjson.Result
	items   []string // every item after the input, tool outputs included
}

// toolFunc answers a function call with a function_call_output item.
type toolFunc func(call gjson.Result) string

// drive runs the tool loop of simple_agent against url: call the model
// with the input so far, append its output (reasoning items without their
// status, as the agent replays them), answer each function call with tool,
// and stop after a turn without a function call. A non-200 fails the test.
func drive(t testing.TB, url, params string, tool toolFunc) episode {
	t.Helper()
	var items []string
	gjson.Get(params, "input").ForEach(func(_, it gjson.Result) bool {
		items = append(items, it.Raw)
		return true
	})
	inputLen := len(items)
	var ep episode
	for step := 1; step <= 10; step++ {
		req := must(sjson.SetRaw(params, "input", "["+strings.Join(items, ",")+"]"))
		status, body := post(t, url+"/v1/responses", req)
		if status != http.StatusOK {
			t.Fatalf("turn %d: HTTP %d: %s", step, status, body)
		}
		answer := gjson.Parse(body)
		ep.answers = append(ep.answers, answer)
		var calls []gjson.Result
		answer.Get("output").ForEach(func(_, it gjson.Result) bool {
			raw := it.Raw
			switch it.Get("type").Str {
			case "reasoning":
				raw = must(sjson.Delete(raw, "status"))
			case "function_call":
				calls = append(calls, it)
			}
			items = append(items, raw)
			return true
		})
		if len(calls) == 0 {
			ep.items = items[inputLen:]
			return ep
		}
		for _, c := range calls {
			items = append(items, tool(c))
		}
	}
	t.Fatal("the episode did not end within 10 turns")
	return ep
}

// recordedTool answers with the tool output item recorded for the call.
func recordedTool(t testing.TB, recorded gjson.Result) toolFunc {
	return func(call gjson.Result) string {
		for _, it := range recorded.Get("response.output").Array() {
			if it.Get("type").Str == "function_call_output" && it.Get("call_id").Str == call.Get("call_id").Str {
				return it.Raw
			}
		}
		t.Fatalf("no recorded output for %s", call.Raw)
		return ""
	}
}

// liveTool answers as gym's own agent and Go tools do: the recorded output
// as compact JSON, in an item with only type, call_id and output.
func liveTool(t testing.TB, recorded gjson.Result) toolFunc {
	rec := recordedTool(t, recorded)
	return func(call gjson.Result) string {
		out := gjson.Get(rec(call), "output").Str
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(out)); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`{"type":"function_call_output","call_id":%s,"output":%s}`, call.Get("call_id").Raw, quote(compact.String()))
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
