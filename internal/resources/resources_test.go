package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
	"github.com/nemo-gym-go/gym/internal/server"
)

const counterConfig = `
counter:
  resources_servers:
    counter:
      entrypoint: app.py
      domain: other
`

// counterServer is a stateful resources server: /seed_session starts a
// count at the row's "start", /increment adds to it, /verify rewards the
// count and ends the episode.
func counterServer(counts *Sessions[int]) server.Factory {
	return func(rt *server.Runtime) (http.Handler, error) {
		return NewHandler(rt, Options{
			Fields: []FieldSpec{{Name: "target", Kind: Int, Required: true}, {Name: "note", Kind: String, Nullable: true}},
			Seed: func(r *http.Request, body json.RawMessage) (any, error) {
				f, err := ValidateFields(body, []FieldSpec{{Name: "start", Kind: Int, Default: json.RawMessage("0")}})
				if err != nil {
					return nil, err
				}
				var start int
				json.Unmarshal(f["start"], &start)
				counts.Set(server.SessionID(r), start)
				return map[string]int{"count": start}, nil
			},
			Tools: []Tool{{Name: "increment", Call: func(r *http.Request, args json.RawMessage) (any, error) {
				n := counts.Update(server.SessionID(r), func(v int, _ bool) int { return v + 1 })
				return map[string]int{"count": n}, nil
			}}},
			Verify: func(_ context.Context, req *VerifyRequest) (*Verdict, error) {
				count, _ := counts.Get(req.SessionID)
				var target int
				json.Unmarshal(req.Field("target"), &target)
				if target < 0 {
					return nil, &JudgeError{Err: errors.New("judge said no")}
				}
				if target == 999 {
					return nil, errors.New("verifier crashed")
				}
				reward := 0.0
				if count == target {
					reward = 1
				}
				v := &Verdict{Reward: reward, Fields: req.Echo("target", "note")}
				v.Fields = append(v.Fields, Field{"count", count})
				return v, nil
			},
			EndSessionOnVerify: []SessionStore{counts},
			Metrics:            MetricsHooks{KeyMetrics: func(*Metrics) *Metrics { return NewMetrics() }},
		})
	}
}

func TestSessionsIsolated(t *testing.T) {
	counts := &Sessions[int]{}
	s := resourcestest.Start(t, counterConfig, "counter", "CounterServer", counterServer(counts))
	alice, bob := resourcestest.NewClient(t), resourcestest.NewClient(t)

	if status, body := s.PostWith(alice, "/seed_session", `{"start": 10, "responses_create_params": {}}`); status != 200 || string(body) != `{"count":10}` {
		t.Fatalf("seed alice: %d %s", status, body)
	}
	s.PostWith(bob, "/seed_session", `{}`)
	for range 3 {
		s.PostWith(alice, "/increment", `{}`)
	}
	if _, body := s.PostWith(bob, "/increment", `{}`); string(body) != `{"count":1}` {
		t.Errorf("bob's count %s, want 1: sessions leak", body)
	}
	_, body := s.PostWith(alice, "/verify", `{"responses_create_params":{"input":[]},"response":{"output":[]},"target":13}`)
	if string(body) != `{"responses_create_params":{"input":[]},"response":{"output":[]},"reward":1.0,"target":13,"note":null,"count":13}` {
		t.Errorf("alice verify: %s", body)
	}
	if counts.Len() != 1 {
		t.Errorf("%d sessions after alice's verify, want bob's only", counts.Len())
	}
	if _, body := s.PostWith(bob, "/verify", `{"responses_create_params":{},"response":{},"target":"1","note":"x"}`); !strings.Contains(string(body), `"reward":1.0,"target":1,"note":"x","count":1`) {
		t.Errorf("bob verify (target as a numeric string): %s", body)
	}
	if counts.Len() != 0 {
		t.Errorf("%d sessions left", counts.Len())
	}

	// Concurrent tool calls of one session must not lose updates.
	s.PostWith(alice, "/seed_session", `{}`)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { s.PostWith(alice, "/increment", `{}`) })
	}
	wg.Wait()
	if _, body := s.PostWith(alice, "/increment", `{}`); string(body) != `{"count":51}` {
		t.Errorf("after 51 concurrent increments: %s", body)
	}
}

// Every endpoint that reads a model refuses a body that is JSON but not
// an object, and takes an object with white space around it.
func TestBodiesMustBeObjects(t *testing.T) {
	counts := &Sessions[int]{}
	s := resourcestest.Start(t, counterConfig, "counter", "CounterServer", counterServer(counts))
	notObject := `{"detail":[{"type":"model_attributes_type","loc":["body"],"msg":"Input should be a valid dictionary or object to extract fields from","input":%s}]}`
	for _, path := range []string{"/seed_session", "/increment", "/verify"} {
		for _, body := range []string{`[1]`, `"x"`, `3`, `null`} {
			status, got := s.Post(path, body)
			if want := fmt.Sprintf(notObject, body); status != 422 || string(got) != want {
				t.Errorf("%s %s: %d %s\nwant 422 %s", path, body, status, got, want)
			}
		}
	}
	for _, path := range []string{"/seed_session", "/increment"} {
		if status, got := s.Post(path, " \n {} \t"); status != 200 {
			t.Errorf("%s with white space: %d %s", path, status, got)
		}
	}
}

// A reply goes with its length, as uvicorn sends it, not chunked.
func TestRepliesAreSized(t *testing.T) {
	s := resourcestest.Start(t, counterConfig, "counter", "CounterServer", counterServer(&Sessions[int]{}))
	big := `{"responses_create_params":{"input":"` + strings.Repeat("x", 5000) + `"},"response":{},"target":1}`
	resp, err := s.Client.Post(s.URL+"/verify", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 || len(body) < 5000 {
		t.Errorf("%d, Content-Length %d, Transfer-Encoding %v, %d bytes", resp.StatusCode, resp.ContentLength, resp.TransferEncoding, len(body))
	}
}

func TestVerifyOutcomes(t *testing.T) {
	counts := &Sessions[int]{}
	s := resourcestest.Start(t, counterConfig, "counter", "CounterServer", counterServer(counts))
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"judge failure is a failsafe row", `{"responses_create_params":{"a":1},"response":{"b":2},"target":-1,"extra":true}`, 200,
			`{"responses_create_params":{"a":1},"response":{"b":2},"target":-1,"note":null,"reward":0.0,"_ng_failure_class":"judge_failed","_ng_failure_judge_error":"judge said no"}`},
		{"other failure is a 500", `{"responses_create_params":{},"response":{},"target":999}`, 500, `"verifier crashed"`},
		{"missing fields", `{"response":{}}`, 422,
			`{"detail":[{"type":"missing","loc":["body","responses_create_params"],"msg":"Field required","input":{"response":{}}},{"type":"missing","loc":["body","target"],"msg":"Field required","input":{"response":{}}}]}`},
		{"wrong types", `{"responses_create_params":[],"response":{},"target":1.5,"note":3}`, 422,
			`{"detail":[{"type":"model_type","loc":["body","responses_create_params"],"msg":"Input should be a valid dictionary or instance of NeMoGymResponseCreateParamsNonStreaming","input":[]},{"type":"int_from_float","loc":["body","target"],"msg":"Input should be a valid integer, got a number with a fractional part","input":1.5},{"type":"string_type","loc":["body","note"],"msg":"Input should be a valid string","input":3}]}`},
		{"empty body", ``, 422, `{"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]}`},
		{"aggregate needs verify_responses", `{}`, 422, `"loc":["body","verify_responses"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/verify"
			if strings.HasPrefix(tc.name, "aggregate") {
				path = "/aggregate_metrics"
			}
			status, body := s.Post(path, tc.body)
			if status != tc.status || !strings.Contains(string(body), tc.want) {
				t.Errorf("%d %s\nwant %d %s", status, body, tc.status, tc.want)
			}
		})
	}
	// The failsafe cleared the session too, as a normal verify does.
	if counts.Len() != 0 {
		t.Errorf("%d sessions left after verifies", counts.Len())
	}
}

func TestRoutes(t *testing.T) {
	s := resourcestest.Start(t, counterConfig, "counter", "CounterServer", counterServer(&Sessions[int]{}))
	get := func(path string) (int, string, string) {
		resp, err := s.Client.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header.Get("Allow")
	}
	if status, body, _ := get("/reverify_mode"); status != 200 || body != `"unknown"` {
		t.Errorf("reverify_mode: %d %s", status, body)
	}
	if status, body, allow := get("/verify"); status != 405 || body != `{"detail":"Method Not Allowed"}` || allow != "POST" {
		t.Errorf("GET /verify: %d %s allow=%s", status, body, allow)
	}
	if status, body, _ := get("/nothing"); status != 404 || body != `{"detail":"Not Found"}` {
		t.Errorf("GET /nothing: %d %s", status, body)
	}
	if status, _ := s.Post("/ng-rollout/3-1/increment", `{}`); status != 200 {
		t.Errorf("tool under the rollout prefix: %d", status)
	}
	if status, body := s.Post("/aggregate_metrics", `{"verify_responses":[{"reward":1}]}`); status != 200 || !strings.HasSuffix(string(body), `"key_metrics":{},"repeat_level_metrics":[]}`) {
		t.Errorf("aggregate_metrics with a key hook: %d %s", status, body)
	}
	if status, body := s.Post("/aggregate_metrics", `{"verify_responses":[1]}`); status != 422 || !strings.Contains(string(body), `"loc":["body","verify_responses",0]`) {
		t.Errorf("aggregate_metrics of a non-object: %d %s", status, body)
	}
}

func TestHandlerOptions(t *testing.T) {
	if _, err := Handler(Options{}); err == nil {
		t.Error("no Verify: want an error")
	}
	verify := func(context.Context, *VerifyRequest) (*Verdict, error) { return &Verdict{}, nil }
	for _, tools := range [][]Tool{
		{{Name: "verify", Call: func(*http.Request, json.RawMessage) (any, error) { return nil, nil }}},
		{{Name: "x"}},
		{{Name: "", Call: func(*http.Request, json.RawMessage) (any, error) { return nil, nil }}},
	} {
		if _, err := Handler(Options{Verify: verify, Tools: tools}); err == nil {
			t.Errorf("tools %v: want an error", tools)
		}
	}
	_, err := NewHandler(resourcestest.Runtime(t, strings.Replace(counterConfig, "domain: other", "domain: other\n      expose_tools_over_mcp: true", 1), "counter", "C"), Options{Verify: verify})
	if err == nil || !strings.Contains(err.Error(), "expose_tools_over_mcp") {
		t.Errorf("MCP on: %v", err)
	}
}

func TestValidateFields(t *testing.T) {
	specs := []FieldSpec{
		{Name: "s", Kind: String, NumberAsString: true},
		{Name: "i", Kind: Int},
		{Name: "f", Kind: Number},
		{Name: "b", Kind: Bool},
		{Name: "l", Kind: List, Items: String},
		{Name: "o", Kind: Object},
		{Name: "e", Kind: String, Enum: []string{"x", "y"}, Default: json.RawMessage(`"x"`)},
		{Name: "n", Kind: String, Nullable: true},
	}
	good := `{"s": 7.5, "i": "12", "f": "2.5", "b": "yes", "l": ["a"], "o": {}, "n": null, "extra": [1]}`
	f, err := ValidateFields(json.RawMessage(good), specs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"s": `"7.5"`, "i": "12", "f": "2.5", "b": "true", "l": `["a"]`, "o": "{}", "e": `"x"`, "n": "null"}
	for k, v := range want {
		if string(f[k]) != v {
			t.Errorf("%s = %s, want %s", k, f[k], v)
		}
	}
	if _, ok := f["extra"]; ok {
		t.Error("undeclared field returned")
	}
	bad := map[string]string{
		`{"i": true}`:      ``, // lax: a bool is 0 or 1
		`{"i": "x"}`:       "int_parsing",
		`{"f": "x"}`:       "float_parsing",
		`{"f": true}`:      "float_type",
		`{"b": 2}`:         "bool_type",
		`{"b": "perhaps"}`: "bool_parsing",
		`{"l": "a"}`:       "list_type",
		`{"l": [1]}`:       "string_type",
		`{"o": []}`:        "dict_type",
		`{"e": "z"}`:       "literal_error",
		`{"s": null}`:      "string_type",
		`{"s": true}`:      "string_type",
	}
	for body, typ := range bad {
		_, err := ValidateFields(json.RawMessage(body), specs)
		var ve *server.ValidationError
		switch {
		case typ == "" && err != nil:
			t.Errorf("%s: %v", body, err)
		case typ != "" && (!errors.As(err, &ve) || ve.Details[0].Type != typ):
			t.Errorf("%s: %v, want %s", body, err, typ)
		}
	}
	_, err = ValidateFields(json.RawMessage(`{"e":"z"}`), specs)
	var ve *server.ValidationError
	if errors.As(err, &ve); ve.Details[0].Msg != "Input should be 'x' or 'y'" {
		t.Errorf("literal message %q", ve.Details[0].Msg)
	}
}

func TestOutputText(t *testing.T) {
	resp := `{"output":[
		{"type":"reasoning","summary":[{"type":"summary_text","text":"thinking"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"},{"type":"refusal","refusal":"no"},{"type":"output_text","text":", world"}]},
		{"type":"function_call","name":"f","arguments":"{}"},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"!"}]}]}`
	if got := OutputText([]byte(resp)); got != "Hello, world!" {
		t.Errorf("OutputText = %q", got)
	}
	for _, r := range []string{`{}`, `{"output":null}`, `{"output":[{"type":"message","content":"text"}]}`, `not json`} {
		if got := OutputText([]byte(r)); got != "" {
			t.Errorf("OutputText(%s) = %q", r, got)
		}
	}
	if PyStrip("\x1c\u00a0 a b\u2003\n") != "a b" {
		t.Error("PyStrip does not strip Python's white space")
	}
}

func TestJSONEncoding(t *testing.T) {
	m := NewMetrics()
	m.Set("f", 1.0)
	m.Set("small", 1e-5)
	m.Set("big", 1e16)
	m.Set("nan", nanValue())
	m.Set("s", "<a & \"b\">\n\x01é\xff")
	m.Set("i", 3)
	m.Set("list", []any{1.5, nil, true, "x"})
	m.Set("f", 2.5) // replaced in place
	m.Delete("i")
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"f":2.5,"small":1e-05,"big":1e+16,"nan":null,"s":"<a & \"b\">\n\u0001é\ufffd","list":[1.5,null,true,"x"]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Errorf("not valid JSON: %v", err)
	}
}

func nanValue() float64 {
	var zero float64
	return zero / zero
}

func TestConfig(t *testing.T) {
	rt := resourcestest.Runtime(t, `
x:
  resources_servers:
    impl:
      entrypoint: app.py
      flag: "on"
      mode: b
      ref: {type: responses_api_models, name: policy_model}
      params: {input: [], temperature: 0.5, nested: {ok: true}}
      rate: "2.5"
      count: 4
`, "x", "X")
	c := Config{Instance: rt.Instance, Node: rt.Config}
	if v, err := c.Bool("flag", false); !v || err != nil {
		t.Errorf("Bool: %v %v", v, err)
	}
	if v, err := c.Bool("absent", true); !v || err != nil {
		t.Errorf("Bool default: %v %v", v, err)
	}
	if v, err := c.Enum("mode", []string{"a", "b"}); v != "b" || err != nil {
		t.Errorf("Enum: %v %v", v, err)
	}
	if _, err := c.Enum("mode", []string{"a"}); err == nil || !strings.Contains(err.Error(), "x.mode: must be 'a'") {
		t.Errorf("Enum error: %v", err)
	}
	if v, err := c.ServerRef("ref", "responses_api_models"); v != "policy_model" || err != nil {
		t.Errorf("ServerRef: %v %v", v, err)
	}
	if _, err := c.ServerRef("ref", "resources_servers"); err == nil {
		t.Error("ServerRef of the wrong type: want an error")
	}
	if v, err := c.JSONObject("params"); string(v) != `{"input":[],"temperature":0.5,"nested":{"ok":true}}` || err != nil {
		t.Errorf("JSONObject: %s %v", v, err)
	}
	if v, err := c.PositiveFloat("rate", 1); v != 2.5 || err != nil {
		t.Errorf("PositiveFloat: %v %v", v, err)
	}
	if v, err := c.PositiveInt("count", 1); v != 4 || err != nil {
		t.Errorf("PositiveInt: %v %v", v, err)
	}
	if _, err := c.PositiveInt("mode", 1); err == nil || !strings.Contains(err.Error(), "x.mode") {
		t.Errorf("PositiveInt error: %v", err)
	}
}

func TestJudgeErrorUnwraps(t *testing.T) {
	cause := errors.New("connection refused")
	err := fmt.Errorf("verify: %w", &JudgeError{Err: cause})
	var je *JudgeError
	if !errors.As(err, &je) || !errors.Is(err, cause) || je.Error() != "connection refused" {
		t.Errorf("JudgeError does not wrap its cause: %v", err)
	}
}
