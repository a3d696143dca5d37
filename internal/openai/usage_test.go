package openai

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

func TestUsageAggregation(t *testing.T) {
	for _, f := range fixtures(t, "usage") {
		t.Run(f.name(), func(t *testing.T) {
			var turns []Usage
			for _, file := range f.ar.Files {
				data := []byte(strings.TrimSpace(string(file.Data)))
				switch {
				case strings.HasSuffix(file.Name, ".responses.json"):
					turns = append(turns, ParseResponsesUsage(data))
				case strings.HasSuffix(file.Name, ".chat.json"):
					turns = append(turns, ParseChatUsage(data))
				}
			}
			var sum Usage
			for _, u := range turns {
				sum = sum.Add(u)
			}
			f.check(t, "want.json", sum.ResponsesJSON(), false)

			// The sum does not depend on the order of the turns.
			var rev Usage
			for i := len(turns) - 1; i >= 0; i-- {
				rev = rev.Add(turns[i])
			}
			if rev != sum {
				t.Errorf("order matters: forward %+v, reverse %+v", sum, rev)
			}
		})
	}
}

func TestParseResponsesUsage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Usage
	}{
		{`{"input_tokens":3,"input_tokens_details":{"cache_write_tokens":0}}`, Usage{Input: Tokens(3), CacheWrite: Tokens(0)}},
		{`{"input_tokens_details":{"cache_write_tokens":null,"cached_tokens":7}}`, Usage{Cached: Tokens(7)}},
		{`{"output_tokens":1e2,"total_tokens":"9","output_tokens_details":{"reasoning_tokens":1.5}}`, Usage{Output: Tokens(100)}},
		{`null`, Usage{}},
		{`not json`, Usage{}},
		{`[1]`, Usage{}},
	} {
		if got := ParseResponsesUsage([]byte(tc.in)); got != tc.want {
			t.Errorf("ParseResponsesUsage(%s) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestUsageResponsesJSON(t *testing.T) {
	for _, tc := range []struct {
		u    Usage
		want string
	}{
		{Usage{}, `{"input_tokens_details":{},"output_tokens_details":{}}`},
		{Usage{Input: Tokens(5), Output: Tokens(1), Total: Tokens(6)}, `{"input_tokens":5,"input_tokens_details":{},"output_tokens":1,"output_tokens_details":{},"total_tokens":6}`},
		{Usage{Input: Tokens(5), CacheWrite: Tokens(0)}, `{"input_tokens":5,"input_tokens_details":{"cache_write_tokens":0},"output_tokens_details":{}}`},
		{Usage{Cached: Tokens(2), CacheWrite: Tokens(3), Reasoning: Tokens(0)}, `{"input_tokens_details":{"cached_tokens":2,"cache_write_tokens":3},"output_tokens_details":{"reasoning_tokens":0}}`},
	} {
		if got := string(tc.u.ResponsesJSON()); got != tc.want {
			t.Errorf("%+v.ResponsesJSON() = %s, want %s", tc.u, got, tc.want)
		}
	}
}

func TestUsageAddIdentity(t *testing.T) {
	u := Usage{Input: Tokens(1), Cached: Tokens(0)}
	if got := (Usage{}).Add(u); got != u {
		t.Errorf("Usage{}.Add(u) = %+v, want u", got)
	}
	if got := u.Add(Usage{}); got != u {
		t.Errorf("u.Add(Usage{}) = %+v, want u", got)
	}
}

// The Anthropic usage a Responses usage becomes: cache counts come out of
// input_tokens (Anthropic counts them apart), and an unreported cache count
// stays absent while an explicit zero is written.
func TestMessagesUsage(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{`{"input_tokens":100,"input_tokens_details":{"cached_tokens":60,"cache_write_tokens":10},"output_tokens":5}`,
			`{"input_tokens":30,"cache_creation_input_tokens":10,"cache_read_input_tokens":60,"output_tokens":5}`},
		{`{"input_tokens":100,"input_tokens_details":{"cached_tokens":0},"output_tokens":5}`,
			`{"input_tokens":100,"cache_read_input_tokens":0,"output_tokens":5}`},
		{`{"input_tokens":100,"output_tokens":5}`, `{"input_tokens":100,"output_tokens":5}`},
		{`null`, `{"input_tokens":0,"output_tokens":0}`},
	} {
		if got := ParseResponsesUsage([]byte(tc.in)).messagesJSON(); got != tc.want {
			t.Errorf("messages usage of %s = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestNormalizeUsage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"input_tokens":1,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":null},"x":1}`,
			`{"input_tokens":1,"input_tokens_details":{"cached_tokens":0},"x":1}`},
		{`{"input_tokens":1,"input_tokens_details":{"cache_write_tokens":0,"cache_write_tokens_details":{"ttl_12h_tokens":0}}}`,
			`{"input_tokens":1,"input_tokens_details":{"cache_write_tokens":0,"cache_write_tokens_details":{"ttl_12h_tokens":0}}}`},
		{`{"input_tokens":null,"output_tokens_details":null,"total_tokens":"3"}`, `{}`},
	} {
		if got := normalizeUsage(tc.in); got != tc.want {
			t.Errorf("normalizeUsage(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// gjsonUsage is how parseUsage read a usage object before it looked its
// counts up among the object's members: a gjson path walk per count.
func gjsonUsage(usageJSON []byte, f usageFields) Usage {
	if !jsonl.Valid(usageJSON) {
		return Usage{}
	}
	u := gjson.ParseBytes(usageJSON)
	if !u.IsObject() {
		return Usage{}
	}
	var counts [len(f)]Count
	for i, p := range f {
		path := p.key
		if p.inner != "" {
			path += "." + p.inner
		}
		counts[i] = countOf(u.Get(path))
	}
	return Usage{Input: counts[0], Output: counts[1], Total: counts[2], Cached: counts[3], CacheWrite: counts[4], Reasoning: counts[5]}
}

// FuzzParseUsage holds parseUsage to gjsonUsage for both APIs' fields.
func FuzzParseUsage(f *testing.F) {
	for _, s := range []string{
		`{"input_tokens":3,"output_tokens":4,"total_tokens":7,"input_tokens_details":{"cached_tokens":1,"cache_write_tokens":2},"output_tokens_details":{"reasoning_tokens":0}}`,
		`{"prompt_tokens":3,"completion_tokens":4.0,"prompt_tokens_details":{"cached_tokens":null},"completion_tokens_details":{"reasoning_tokens":"1"}}`,
		`{"input_tokens_details":{},"input_tokens_details":{"cached_tokens":5}}`, `{"input_tokens_details":1,"input_tokens_details":{"cached_tokens":5}}`,
		`{"input_tokens_details":[{"cached_tokens":5}]}`, `{"input_tokens":1,"input_tokens":2}`, `{"\u0069nput_tokens":1e3}`, `null`, `[]`, `{`, `{"input_tokens":1}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fields := range []usageFields{responsesUsageFields, chatUsageFields} {
			if got, want := parseUsage(b, fields), gjsonUsage(b, fields); got != want {
				t.Fatalf("parseUsage(%q, %s) = %+v, gjson's paths %+v", b, fields[0].key, got, want)
			}
		}
	})
}
