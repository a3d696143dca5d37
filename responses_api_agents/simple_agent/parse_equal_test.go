package simpleagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/server"
)

// The agent read its requests and the model's answers with gjson path
// walks before it looked keys up among members found in one validating
// read; the walks stay here as the reference the fuzzers hold it to.

func gjsonParseTurn(body []byte) (turn, error) {
	if !jsonl.Valid(body) {
		return turn{}, errors.New("not JSON")
	}
	v := gjson.ParseBytes(body)
	if !v.IsObject() {
		return turn{}, errors.New("not a JSON object")
	}
	output := v.Get("output")
	if !output.IsArray() {
		return turn{}, errors.New("output is not a list")
	}
	t := turn{raw: v.Raw}
	var bad error
	i := 0
	output.ForEach(func(_, item gjson.Result) bool {
		typ := item.Get("type")
		if !item.IsObject() || typ.Type != gjson.String {
			bad = fmt.Errorf("output[%d] has no type", i)
			return false
		}
		raw := item.Raw
		switch typ.Str {
		case "function_call":
			name, callID, args := item.Get("name"), item.Get("call_id"), item.Get("arguments")
			if name.Type != gjson.String || callID.Type != gjson.String || args.Type != gjson.String {
				bad = fmt.Errorf("output[%d] is a function_call without a string name, call_id and arguments", i)
				return false
			}
			t.calls = append(t.calls, toolCall{name: name.Str, callID: callID.Raw, arguments: args.Str})
		case "message":
			t.answered = t.answered || item.Get("role").Str == "assistant"
		case "reasoning":
			if item.Get("status").Exists() {
				raw, _ = sjson.Delete(raw, "status")
			}
		}
		t.items = append(t.items, raw)
		i++
		return true
	})
	if bad != nil {
		return turn{}, bad
	}
	if d := v.Get("incomplete_details"); d.Exists() && d.Type != gjson.Null {
		t.incomplete = true
	}
	if u := v.Get("usage"); u.Exists() {
		t.usage = openai.ParseResponsesUsage([]byte(u.Raw))
	}
	return t, nil
}

func gjsonCheckParams(v gjson.Result, loc []any) error {
	at := func(key string) []any { return append(append([]any{}, loc...), key) }
	if !v.IsObject() {
		return invalid("model_attributes_type", loc, "Input should be a valid dictionary or object to extract fields from", json.RawMessage(v.Raw))
	}
	switch in := v.Get("input"); {
	case !in.Exists():
		return invalid("missing", at("input"), "Field required", json.RawMessage(v.Raw))
	case in.Type != gjson.String && !in.IsArray():
		return invalid("list_type", at("input"), "Input should be a valid string or list", json.RawMessage(in.Raw))
	}
	if s := v.Get("stream"); s.Exists() && s.Type != gjson.False && s.Type != gjson.Null {
		return invalid("literal_error", at("stream"), "Input should be False", json.RawMessage(s.Raw))
	}
	return nil
}

func gjsonRunParams(row []byte) ([]byte, error) {
	v := gjson.ParseBytes(row)
	if !v.IsObject() {
		return nil, invalid("model_attributes_type", []any{"body"}, "Input should be a valid dictionary or object to extract fields from", json.RawMessage(row))
	}
	params := v.Get("responses_create_params")
	if !params.Exists() {
		return nil, invalid("missing", []any{"body", "responses_create_params"}, "Field required", json.RawMessage(row))
	}
	if err := gjsonCheckParams(params, []any{"body", "responses_create_params"}); err != nil {
		return nil, err
	}
	return []byte(params.Raw), nil
}

// gjsonEpisodeRequest is the first model request and the episode's input
// items as the agent built them from a /v1/responses body.
func gjsonEpisodeRequest(body []byte) (string, []string, error) {
	v := gjson.ParseBytes(body)
	if err := gjsonCheckParams(v, []any{"body"}); err != nil {
		return "", nil, err
	}
	var items []string
	if in := v.Get("input"); in.Type == gjson.String {
		items = []string{`{"role":"user","content":` + in.Raw + `}`}
	} else {
		in.ForEach(func(_, item gjson.Result) bool {
			items = append(items, item.Raw)
			return true
		})
	}
	req, err := sjson.SetRaw(v.Raw, "input", string(appendJSONArray(nil, items)))
	return req, items, err
}

// episodeRequest is the same, as responses builds them now.
func episodeRequest(body []byte) (string, []string, error) {
	var e episode
	if err := e.readRequest(testParams(body)); err != nil {
		return "", nil, err
	}
	return string(e.request()), e.items, nil
}

// testParams is a valid body as params, as the handlers read one.
func testParams(body []byte) params {
	members, object, _ := jsonl.Members(body, nil)
	return bodyParams(body, members, object)
}

// sameError is whether two validation errors answer the same 422 body.
func sameError(t *testing.T, got, want error) bool {
	t.Helper()
	if (got == nil) != (want == nil) {
		return false
	}
	if got == nil {
		return true
	}
	var g, w *server.ValidationError
	if !errors.As(got, &g) || !errors.As(want, &w) {
		return got.Error() == want.Error()
	}
	gb, gerr := json.Marshal(g.Details)
	wb, werr := json.Marshal(w.Details)
	return gerr == nil && werr == nil && bytes.Equal(gb, wb)
}

// gjsonKeysDiffer is whether body has an escaped key with invalid UTF-8,
// which gjson compares raw and a decoder as U+FFFD: the one place the two
// readings of a key part.
func gjsonKeysDiffer(body []byte) bool {
	return bytes.IndexByte(body, '\\') >= 0 && !utf8.Valid(body)
}

func FuzzParseTurn(f *testing.F) {
	for _, s := range []string{
		`{"id":"r","output":[{"type":"function_call","name":"get_weather","call_id":"c1","arguments":"{\"city\":\"SF\"}"}],"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}`,
		` {"output":[{"type":"message","role":"assistant","content":[]},{"type":"reasoning","status":null,"summary":[]}],"incomplete_details":null} `,
		`{"output":[{"type":"reasoning","summary":[]}],"incomplete_details":{"reason":"max_output_tokens"}}`,
		`{"output":[{"type":"function_call","name":"f","call_id":1,"arguments":"{}"}]}`, `{"output":[{"type":"x"},3]}`, `{"output":[{"typ\u0065":"message","role":"assist\u0061nt"}]}`,
		`{"output":{}}`, `{"output":[]}`, `{"usage":null,"output":[],"usage":{}} `, `{"output":[],"output":[1]}`, `[]`, `{"output":[`, `{"output":null,"output":[]}`, `{"output":[{"type":"message","role":1,"type":"x"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if gjsonKeysDiffer(body) {
			return
		}
		got, gotErr := parseTurn(body)
		want, wantErr := gjsonParseTurn(body)
		read := got
		read.output, read.usageAt = jsonl.Span{}, jsonl.Span{}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(read, want) {
			t.Fatalf("parseTurn(%q) = %+v, %v; the gjson walks read %+v, %v", body, got, gotErr, want, wantErr)
		}
		if gotErr != nil {
			return
		}
		const output, usage = `[{"type":"message"}]`, `{"input_tokens":1}`
		response, err := got.response([]byte(output), usage)
		withSJSON, sjsonErr := sjson.SetRaw(want.raw, "output", output)
		if sjsonErr == nil {
			withSJSON, sjsonErr = sjson.SetRaw(withSJSON, "usage", usage)
		}
		if response != withSJSON || (err == nil) != (sjsonErr == nil) {
			t.Fatalf("response of %q = %q, %v; with sjson %q, %v", body, response, err, withSJSON, sjsonErr)
		}
	})
}

func FuzzRunParams(f *testing.F) {
	for _, s := range []string{
		weatherRow, `{"responses_create_params":{"input":"hi"}} `, `{"responses_create_params":{"input":"hi","stream":false,"stream":true}}`,
		`{"responses_create_params":{"input":3}}`, `{"responses_create_params":{"model":"x"}}`, `{"responses_create_params":[]}`, `{"input":"hi"}`, `[1]`, `"x"`,
		`{"responses_create_params":{"input":[],"stream":null},"responses_create_params":1}`, `{"responses_create_params":{"\u0069nput":"x","stream":true}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, row []byte) {
		if !jsonl.Valid(row) || gjsonKeysDiffer(row) {
			return // DecodeJSON answers these
		}
		got, gotErr := runParams(testParams(row))
		want, wantErr := gjsonRunParams(row)
		if !bytes.Equal(got, want) || !sameError(t, gotErr, wantErr) {
			t.Fatalf("runParams(%q) = %q, %v; the gjson walks read %q, %v", row, got, gotErr, want, wantErr)
		}
	})
}

func FuzzEpisodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"input":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"c","output":"{}"}],"tools":[],"model":"m"}`,
		`{"model":"m","input":"what's it like in sf?"}` + "\n", `  {"input":[] , "input":"x"}  `, `{"input":[1, 2 ,{"a":[]}]}`, `{"input":{}}`, `{"stream":true,"input":[]}`, `[]`,
		`{"\u0069nput":["a"],"temperature":0.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !jsonl.Valid(body) || gjsonKeysDiffer(body) {
			return // DecodeJSON answers these
		}
		got, gotItems, gotErr := episodeRequest(body)
		want, wantItems, wantErr := gjsonEpisodeRequest(body)
		if wantErr != nil && !strings.Contains(fmt.Sprint(wantErr), "invalid request") {
			return // sjson could not set the input: not a request checkParams lets through
		}
		if got != want || !slices.Equal(gotItems, wantItems) || !sameError(t, gotErr, wantErr) {
			t.Fatalf("for %q: request %q, items %q, %v; with sjson %q, %q, %v", body, got, gotItems, gotErr, want, wantItems, wantErr)
		}
	})
}
