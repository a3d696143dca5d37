package capture

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/test/gymbin"
)

// vllm is a vLLM chat-completions server for example_single_tool_call: it
// calls get_weather until it has the tool's output, then answers, each
// call with its own generated token ids, and the prompt's from /tokenize.
// It keeps what it was asked.
type vllm struct {
	mu    sync.Mutex
	next  int
	asked []string
}

func (v *vllm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	v.mu.Lock()
	v.next++
	n := v.next
	v.asked = append(v.asked, r.URL.Path+" "+string(body))
	v.mu.Unlock()
	if r.URL.Path == "/tokenize" {
		io.WriteString(w, `{"tokens":[1,2,3],"count":3}`)
		return
	}
	msg := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"SF\"}"}}]}`
	if strings.Contains(string(body), `"role":"tool"`) {
		msg = `{"role":"assistant","content":"It is sunny."}`
	}
	gen := []int{1000 + n, 2000 + n}
	// What vLLM returns only when asked: its own token ids
	// (return_token_ids) and per-token log probabilities (logprobs).
	var ids, logprobs string
	if gjson.GetBytes(body, "return_token_ids").Bool() {
		ids = fmt.Sprintf(`"token_ids":[%d,%d],`, gen[0], gen[1])
	}
	if gjson.GetBytes(body, "logprobs").Bool() {
		logprobs = fmt.Sprintf(`,"logprobs":{"content":[{"token":"token_id:%d","logprob":-0.5},{"token":"token_id:%d","logprob":-0.25}]}`, gen[0], gen[1])
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1,"model":"served","choices":[{"index":0,%s"message":%s,"finish_reason":"stop"%s}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
		n, ids, msg, logprobs)
}

// Training-token capture through the real binary and servers, on
// vllm_model in front of a fake vLLM: the model server records every
// call's tokens; simple_agent's rows carry the ids the model generated,
// so the collector leaves them as they are and retires the captures once
// the rows are on disk. Without token ids from the backend every row is
// masked, and max_mask_fraction stops the run with NeMo Gym's words.
func TestTrainingTokenCaptureEndToEnd(t *testing.T) {
	gym, err := gymbin.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	up := &vllm{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	work := t.TempDir()
	run := func(out, tokens string, extra ...string) (string, error) {
		t.Helper()
		args := append([]string{"eval", "run", "--benchmark", "example_single_tool_call", "--model-type", "vllm_model", "--split", "benchmark", "-o", out,
			"++head_server.port=0", "+policy_base_url=" + srv.URL + "/v1", "+policy_api_key=k", "+policy_model_name=served",
			"+token_id_capture.enabled=true", "+token_id_capture.all_agents=true", "+token_id_capture.dir=" + tokens}, extra...)
		cmd := exec.Command(gym, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GYM_INSTALL_ROOT="+repo, "NEMO_GYM_EXTRA_ROOTS=", "NO_COLOR=1")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}

	tokens := filepath.Join(work, "tokens")
	out, err := run("r.jsonl", tokens, "++policy_model.responses_api_models.vllm_model.return_token_id_information=true")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "Clearing existing token captures for rollouts being dispatched") {
		t.Errorf("the collector did not clear the token captures:\n%s", out)
	}
	rows := readLines(t, filepath.Join(work, "r.jsonl"))
	if len(rows) != 5 {
		t.Fatalf("%d rows:\n%s", len(rows), out)
	}
	for _, row := range rows {
		raw, _ := json.Marshal(row)
		key := fmt.Sprintf("%s-%s", row["_ng_task_index"], row["_ng_rollout_index"])
		if _, masked := row["mask_sample"]; masked || row["_ng_token_capture"] != nil {
			t.Errorf("rollout %s: a row with the policy's own token ids was rebuilt or masked: %s", key, raw)
		}
		var generated []string
		gjson.GetBytes(raw, "response.output").ForEach(func(_, it gjson.Result) bool {
			if g := it.Get("generation_token_ids"); g.Exists() {
				generated = append(generated, g.Raw)
			}
			return true
		})
		if len(generated) == 0 {
			t.Errorf("rollout %s: no token ids in the row: %s", key, raw)
		}
		// The capture was retired after the row reached the disk: the
		// entries are gone, a tombstone stays.
		if _, err := os.Stat(filepath.Join(tokens, key+".tokens.jsonl")); err == nil {
			t.Errorf("rollout %s: its token capture was not retired", key)
		}
		state, err := os.ReadFile(filepath.Join(tokens, key+".tokens.state.json"))
		if err != nil || !strings.Contains(string(state), `"frozen":true`) || !strings.Contains(string(state), `"retired":true`) {
			t.Errorf("rollout %s: state %s, %v; want a frozen, retired tombstone", key, state, err)
		}
	}
	up.mu.Lock()
	for _, body := range up.asked {
		path, body, _ := strings.Cut(body, " ")
		if path != "/v1/chat/completions" {
			continue // /tokenize, and the launcher's readiness probe
		}
		if !strings.Contains(body, `"return_tokens_as_token_ids":true`) || !strings.Contains(body, `"logprobs":true`) || strings.Contains(body, `"stream":true`) {
			t.Errorf("vLLM was asked %s; want token ids and log probabilities, without a stream", body)
		}
	}
	up.mu.Unlock()

	// A backend without token ids: the calls succeed, each rollout is masked.
	masked := filepath.Join(work, "tokens-masked")
	out, err = run("masked.jsonl", masked)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "answers carry no token ids") || !strings.Contains(out, "5 rollouts rebuilt from their captured tokens, 5 of them masked") {
		t.Errorf("nothing said about the masked rollouts:\n%s", out)
	}
	for _, row := range readLines(t, filepath.Join(work, "masked.jsonl")) {
		if string(row["mask_sample"]) != "true" || string(row["_ng_token_capture"]) != `{"n_calls":0,"capture_incomplete":true,"error":"capture contains no token records"}` {
			t.Errorf("row mask_sample %s, _ng_token_capture %s; want NeMo Gym's masked row", row["mask_sample"], row["_ng_token_capture"])
		}
	}

	// Mostly masked: the collection stops, as NeMo Gym's does.
	out, err = run("stopped.jsonl", filepath.Join(work, "tokens-stopped"), "+token_id_capture.max_mask_fraction=0.5", "+token_id_capture.mask_fraction_min_samples=2")
	if err == nil || !strings.Contains(out, "finalized rollouts (100.0%) are masked, exceeding token_id_capture.max_mask_fraction=0.5. Mask reasons: {'capture_incomplete': ") ||
		!strings.Contains(out, "Aborting instead of collecting mostly token-less data.") {
		t.Errorf("want the run stopped past max_mask_fraction; got %v:\n%s", err, out)
	}
}
