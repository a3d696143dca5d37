package oracle

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/capture"
)

//go:embed testdata/nemo_gym_token_finalize.py
var tokenFinalizeScript []byte

//go:embed testdata/nemo_gym_token_write.py
var tokenWriteScript []byte

// A tool call and the answer after it, as gym's vllm_model serves them
// with return_token_id_information: the token fields on the last item.
const (
	firstRequest  = `{"model":"served","input":[{"role":"user","content":"weather in SF?"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
	firstAnswer   = `{"id":"resp_1","object":"response","model":"served","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\": \"SF\"}","status":"completed","prompt_token_ids":[11,12],"generation_token_ids":[13,14],"generation_log_probs":[-0.1,-0.25]}]}`
	toolOutput    = `{"type":"function_call_output","call_id":"call_1","output":"sunny"}`
	secondAnswer  = `{"id":"resp_2","object":"response","model":"served","status":"completed","output":[{"type":"message","id":"msg_2","role":"assistant","status":"completed","content":[{"type":"output_text","text":"It is sunny.","annotations":[]}],"prompt_token_ids":[11,12,13,14,21],"generation_token_ids":[22],"generation_log_probs":[0.0]}]}`
	finalResponse = `{"id":"resp_2","model":"served","object":"response","output":[{"arguments":"{\"city\": \"SF\"}","call_id":"call_1","id":"fc_1","name":"get_weather","status":"completed","type":"function_call"},{"call_id":"call_1","output":"sunny","type":"function_call_output"},{"content":[{"annotations":[],"text":"It is sunny.","type":"output_text"}],"id":"msg_2","role":"assistant","status":"completed","type":"message"}]}`
)

func secondRequest() string {
	var first struct{ Output []json.RawMessage }
	json.Unmarshal([]byte(firstAnswer), &first)
	return `{"model":"served","input":[{"role":"user","content":"weather in SF?"},` + string(first.Output[0]) + `,` + toolOutput +
		`],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
}

// handEntry is an entry line written without a model server, for shapes a
// model server does not produce on its own.
func handEntry(t *testing.T, key, id string, prompt, gen []int, resolution string, parent any, digest string) string {
	t.Helper()
	logps := make([]float64, len(gen))
	for i := range logps {
		logps[i] = -0.5
	}
	e := map[string]any{
		"schema_version": 1, "rollout_id": key, "model_call_id": id, "model": "served",
		"prompt_token_ids": prompt, "generation_token_ids": gen, "generation_log_probs": logps,
		"output_items":     []any{map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": id}}}},
		"token_item_index": 0, "response_id": "resp_" + id, "created_at": 1.5, "parent_call_id": parent,
		"cum_len": len(prompt) + len(gen), "digest": digest, "parent_resolution": resolution,
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTokenFinalizeMatchesNeMoGym holds gym's collector-side rebuild of
// rows from training-token captures to NeMo Gym's own
// finalize_rollout_token_capture on copies of one token store: each row
// byte for byte, which builds mask the row and which captures may be
// retired.
func TestTokenFinalizeMatchesNeMoGym(t *testing.T) {
	e := setup(t)
	ours, theirs := filepath.Join(e.tmp, "tokens-gym"), filepath.Join(e.tmp, "tokens-nemo")
	store, err := capture.OpenTokens(ours)
	if err != nil {
		t.Fatal(err)
	}
	call := func(key, id, request, answer string) {
		tc, err := store.Begin(key, id, []byte(request))
		if err != nil {
			t.Fatal(err)
		}
		if answer != "" {
			if err := tc.Finish([]byte(answer)); err != nil && !errors.Is(err, capture.ErrNoTokenIDs) {
				t.Fatal(err)
			}
		}
	}
	appendLine := func(key, line string) {
		f, err := os.OpenFile(filepath.Join(ours, key+".tokens.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(line + "\n")
		f.Close()
	}
	row := func(task, rollout int, response string, extra string) string {
		r := `{"responses_create_params":{"input":"hi"},`
		if response != "" {
			r += `"response":` + response + `,`
		}
		r += fmt.Sprintf(`"reward":1.0,"_ng_task_index":%d,"_ng_rollout_index":%d,"agent_ref":{"type":"responses_api_agents","name":"a"}`, task, rollout)
		if extra != "" {
			r += "," + extra
		}
		return r + "}"
	}
	withTokens := strings.Replace(finalResponse, `"type":"message"}`, `"type":"message","prompt_token_ids":[11,12,13,14,21],"generation_token_ids":[22],"generation_log_probs":[0.0]}`, 1)
	const d2 = "bf99633051449f0f3248b4995a7c8468b9561d7732447341916085f12ff9ff54" // digest of [1,2,3]

	var rows []string
	cases := []struct {
		name string
		row  string
		make func(key string)
	}{
		{"a tool call and the answer", row(0, 0, finalResponse, ""), func(k string) {
			call(k, "c1", firstRequest, firstAnswer)
			call(k, "c2", secondRequest(), secondAnswer)
		}},
		{"an output that has its token ids", row(0, 1, withTokens, ""), func(k string) {
			call(k, "c1", firstRequest, firstAnswer)
			call(k, "c2", secondRequest(), secondAnswer)
		}},
		{"nothing captured", row(1, 0, finalResponse, ""), func(string) {}},
		{"a hosted backend", row(1, 1, finalResponse, ""), func(k string) {
			call(k, "c1", firstRequest, `{"id":"resp_1","output":[{"type":"message","role":"assistant","content":[]}]}`)
		}},
		{"two retries of the first call", row(2, 0, `{"id":"other","output":[]}`, ""), func(k string) {
			appendLine(k, handEntry(t, k, "r1", []int{1, 2}, []int{3}, "root", nil, d2))
			appendLine(k, handEntry(t, k, "r2", []int{1, 2}, []int{4}, "root", nil, "x"))
		}},
		{"a call that left no entry", row(2, 1, finalResponse, ""), func(k string) {
			call(k, "c1", firstRequest, firstAnswer)
			call(k, "c2", secondRequest(), "")
		}},
		{"a parent whose tokens the child does not extend", row(3, 0, `{"id":"resp_p2","output":[]}`, ""), func(k string) {
			appendLine(k, handEntry(t, k, "p1", []int{1, 2}, []int{3}, "root", nil, d2))
			appendLine(k, handEntry(t, k, "p2", []int{1, 9, 3, 4}, []int{5}, "resolved", "p1", "y"))
		}},
		{"a malformed rollout id", row(3, 1, finalResponse, `"_ng_rollout_id":"bad id!"`), func(string) {}},
		{"a declared terminal that was not captured", row(4, 0, finalResponse, `"terminal_response_id":"resp_9"`), func(k string) {
			call(k, "c1", firstRequest, firstAnswer)
			call(k, "c2", secondRequest(), secondAnswer)
		}},
		{"a row without a response", row(4, 1, "", ""), func(k string) {
			call(k, "c1", firstRequest, firstAnswer)
			call(k, "c2", secondRequest(), secondAnswer)
		}},
		{"an explicit terminal on the first call", row(5, 0, finalResponse, `"_ng_terminal_model_call_id":"c1"`), func(k string) {
			call(k, "c1", firstRequest, firstAnswer)
			call(k, "c2", secondRequest(), secondAnswer)
		}},
	}
	for _, c := range cases {
		key, err := capture.Key([]byte(c.row))
		if err != nil {
			key = ""
		}
		if key != "" {
			c.make(key)
		}
		rows = append(rows, c.row)
	}
	if err := os.CopyFS(theirs, os.DirFS(ours)); err != nil {
		t.Fatal(err)
	}
	type verdict struct {
		Row                   string
		Built, Masked, Retire bool
	}
	var got []verdict
	for _, r := range rows {
		out, build := store.Finalize([]byte(r))
		v := verdict{Row: string(out), Built: build != nil}
		if build != nil {
			v.Masked = build.Masked
			v.Retire = build.Retirable()
		}
		got = append(got, v)
	}

	lines := e.runScript(t, "finalize", tokenFinalizeScript, map[string][]byte{"token-rows.jsonl": []byte(strings.Join(rows, "\n") + "\n")}, "token-nemo.jsonl",
		theirs, "token-rows.jsonl", "token-nemo.jsonl")
	if len(lines) != len(cases) {
		t.Fatalf("NeMo Gym wrote %d verdicts for %d rows", len(lines), len(cases))
	}
	for i, c := range cases {
		var want verdict
		if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
			t.Fatal(err)
		}
		if got[i].Row != want.Row {
			t.Errorf("%s: rows differ:\nNeMo Gym: %s\ngym:      %s\nfirst difference at byte %d", c.name, want.Row, got[i].Row, firstDiff(want.Row, got[i].Row))
		}
		if got[i].Built != want.Built || got[i].Masked != want.Masked || got[i].Retire != want.Retire {
			t.Errorf("%s: gym built %v, masked %v, retirable %v; NeMo Gym %v, %v, %v", c.name, got[i].Built, got[i].Masked, got[i].Retire, want.Built, want.Masked, want.Retire)
		}
	}
}

// TestTokenEntriesMatchNeMoGym holds the entries gym's model servers write
// to those NeMo Gym's capture middleware writes for the same calls: line
// for line, byte for byte but the time each was written, parents resolved
// the same way.
func TestTokenEntriesMatchNeMoGym(t *testing.T) {
	e := setup(t)
	ours, theirs := filepath.Join(e.tmp, "entries-gym"), filepath.Join(e.tmp, "entries-nemo")
	store, err := capture.OpenTokens(ours)
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		Key     string          `json:"key"`
		ID      string          `json:"id"`
		Request json.RawMessage `json:"request"`
		Answer  json.RawMessage `json:"answer"`
	}
	chat := `{"model":"served","messages":[{"role":"system","content":"Be brief. \u00e9"},{"role":"user","content":"hi"}]}`
	chatAnswer := `{"id":"chatcmpl-1","object":"chat.completion","model":"served","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello","prompt_token_ids":[5,6],"generation_token_ids":[7],"generation_log_probs":[-1.5]}}]}`
	calls := []call{
		{"0-0", "c1", json.RawMessage(firstRequest), json.RawMessage(firstAnswer)},
		{"0-0", "c2", json.RawMessage(secondRequest()), json.RawMessage(secondAnswer)},
		{"0-0", "c3", json.RawMessage(secondRequest()), json.RawMessage(strings.Replace(secondAnswer, "resp_2", "resp_3", 1))},
		{"1-0", "c1", json.RawMessage(chat), json.RawMessage(chatAnswer)},
		{"1-0", "c2", json.RawMessage(chat), json.RawMessage(`{"id":"x","choices":[{"message":{"role":"assistant","content":"no tokens"}}]}`)},
		{"2-0", "c1", json.RawMessage(`{"input":"a string input","instructions":"be terse"}`), json.RawMessage(strings.Replace(firstAnswer, "resp_1", "resp_s", 1))},
	}
	var lines []string
	for _, c := range calls {
		tc, err := store.Begin(c.Key, c.ID, c.Request)
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.Finish(c.Answer); err != nil && !errors.Is(err, capture.ErrNoTokenIDs) {
			t.Fatal(err)
		}
		b, _ := json.Marshal(c)
		lines = append(lines, string(b))
	}
	e.runScript(t, "write", tokenWriteScript, map[string][]byte{"token-calls.jsonl": []byte(strings.Join(lines, "\n") + "\n")}, "token-calls.jsonl",
		theirs, "token-calls.jsonl")
	created := regexp.MustCompile(`"created_at":[0-9.e+-]+`)
	for _, key := range []string{"0-0", "1-0", "2-0"} {
		for _, suffix := range []string{".tokens.jsonl", ".tokens.intents", ".tokens.incomplete"} {
			a, aerr := os.ReadFile(filepath.Join(theirs, key+suffix))
			b, berr := os.ReadFile(filepath.Join(ours, key+suffix))
			if os.IsNotExist(aerr) != os.IsNotExist(berr) {
				t.Errorf("%s%s: NeMo Gym's exists: %v, gym's: %v", key, suffix, aerr == nil, berr == nil)
				continue
			}
			want, got := created.ReplaceAllString(string(a), `"created_at":0`), created.ReplaceAllString(string(b), `"created_at":0`)
			if suffix == ".tokens.jsonl" && strings.Count(want, "\n") != map[string]int{"0-0": 3, "1-0": 1, "2-0": 1}[key] {
				t.Errorf("%s: NeMo Gym wrote %d entries: %s", key, strings.Count(want, "\n"), want)
			}
			if want != got {
				t.Errorf("%s%s differs:\nNeMo Gym: %s\ngym:      %s\nfirst difference at byte %d", key, suffix, want, got, firstDiff(want, got))
			}
		}
	}
}
