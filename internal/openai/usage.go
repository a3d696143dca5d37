package openai

import (
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Count is a token count that remembers whether anyone reported it. An
// unreported count is not zero: a provider that does not report cache
// writes may still have written to the cache, and a sum that treated the
// gap as 0 would present a guess as a measurement.
type Count struct {
	N     int64
	Known bool
}

// Tokens is a reported count of n.
func Tokens(n int64) Count { return Count{N: n, Known: true} }

func countOf(v gjson.Result) Count {
	if n, ok := integer(v); ok {
		return Tokens(n)
	}
	return Count{}
}

// Usage is one call's token usage, or a sum of several, in the Responses
// vocabulary. Input counts every prompt token, cached and cache-written ones
// included (OpenAI's convention; Anthropic's differs, see the Messages
// conversion).
type Usage struct {
	Input      Count // input_tokens / prompt_tokens
	Output     Count // output_tokens / completion_tokens
	Total      Count // total_tokens
	Cached     Count // input_tokens_details.cached_tokens: prompt tokens read from the cache
	CacheWrite Count // input_tokens_details.cache_write_tokens: prompt tokens written to the cache
	Reasoning  Count // output_tokens_details.reasoning_tokens
}

// usagePath is where one count sits in a usage object: at key, or at
// inner in key's object when inner is set.
type usagePath struct{ key, inner string }

// usageFields are where each count sits in one API's usage object, in
// Usage's order: input, output, total, cached, cache write, reasoning.
type usageFields [6]usagePath

var (
	responsesUsageFields = usageFields{{"input_tokens", ""}, {"output_tokens", ""}, {"total_tokens", ""},
		{"input_tokens_details", "cached_tokens"}, {"input_tokens_details", "cache_write_tokens"}, {"output_tokens_details", "reasoning_tokens"}}
	// Providers that report cache writes on Chat Completions put them in
	// prompt_tokens_details.cache_write_tokens.
	chatUsageFields = usageFields{{"prompt_tokens", ""}, {"completion_tokens", ""}, {"total_tokens", ""},
		{"prompt_tokens_details", "cached_tokens"}, {"prompt_tokens_details", "cache_write_tokens"}, {"completion_tokens_details", "reasoning_tokens"}}
)

// ParseResponsesUsage reads a Responses `usage` object. Anything that is
// not a whole number (absent, null, a string) stays unknown; invalid JSON
// or a null usage yields a Usage with nothing known.
func ParseResponsesUsage(usageJSON []byte) Usage { return parseUsage(usageJSON, responsesUsageFields) }

// ParseChatUsage reads a Chat Completions `usage` object, as
// ParseResponsesUsage does.
func ParseChatUsage(usageJSON []byte) Usage { return parseUsage(usageJSON, chatUsageFields) }

func parseUsage(usageJSON []byte, f usageFields) Usage {
	var scratch [12]jsonl.Member
	members, object, valid := jsonl.Members(usageJSON, scratch[:0])
	if !valid || !object {
		return Usage{}
	}
	// Each count is read as gjson.Get reads its path: key.inner is inner
	// in the first member named key that has it. All six are looked for in
	// one pass over the members.
	var counts [len(f)]Count
	var found [len(f)]bool
	var detailsScratch [8]jsonl.Member
	for _, m := range members {
		name := m.Name(usageJSON)
		var details []jsonl.Member
		detailsRead := false
		for i, path := range f {
			if found[i] || string(name) != path.key {
				continue
			}
			if path.inner == "" {
				counts[i], found[i] = countOf(gjson.ParseBytes(m.Value(usageJSON))), true
				continue
			}
			if !detailsRead {
				var end int
				details, end = jsonl.MembersAt(usageJSON, m.ValueStart, detailsScratch[:0])
				if end < 0 {
					details = nil
				}
				detailsRead = true
			}
			if j := jsonl.Lookup(usageJSON, details, path.inner); j >= 0 {
				counts[i], found[i] = countOf(gjson.ParseBytes(details[j].Value(usageJSON))), true
			}
		}
	}
	return Usage{Input: counts[0], Output: counts[1], Total: counts[2], Cached: counts[3], CacheWrite: counts[4], Reasoning: counts[5]}
}

// Reported reports whether any count is known.
func (u Usage) Reported() bool {
	return u.Input.Known || u.Output.Known || u.Total.Known ||
		u.Cached.Known || u.CacheWrite.Known || u.Reasoning.Known
}

// Add sums the usage of two calls, for an agent's multi-turn total.
//
// A Usage with nothing reported (the zero value, or a call whose usage was
// null) is the identity: a sum starts from Usage{} and a call without usage
// adds nothing, as NeMo Gym's agent skips a null usage.
//
// Top-level counts (input, output, total) are summed over the sides that
// report them. Both APIs require them, so one missing is a malformed report,
// and the other side's count is still a measurement.
//
// A detail count (cached, cache-write, reasoning) is known only if both
// sides know it. A details object that is absent or null counts as every
// field in it unknown, exactly like an absent field. NeMo Gym differs here
// (errata L3): its sum keeps the running details when a turn's details
// object is null, which counts that turn as zero, and keeps them null when
// the first turn's were. That makes the result depend on turn order and
// turns a missing report into a zero; we keep unknown unknown instead.
func (u Usage) Add(v Usage) Usage {
	if !u.Reported() {
		return v
	}
	if !v.Reported() {
		return u
	}
	return Usage{
		Input:      sumKnown(u.Input, v.Input),
		Output:     sumKnown(u.Output, v.Output),
		Total:      sumKnown(u.Total, v.Total),
		Cached:     sumBoth(u.Cached, v.Cached),
		CacheWrite: sumBoth(u.CacheWrite, v.CacheWrite),
		Reasoning:  sumBoth(u.Reasoning, v.Reasoning),
	}
}

func sumKnown(a, b Count) Count {
	switch {
	case a.Known && b.Known:
		return Tokens(a.N + b.N)
	case a.Known:
		return a
	default:
		return b
	}
}

func sumBoth(a, b Count) Count {
	if a.Known && b.Known {
		return Tokens(a.N + b.N)
	}
	return Count{}
}

// ResponsesJSON writes u as a Responses `usage` object. An unknown count is
// left out: never null, never an invented 0. The two details objects are
// always written, empty if need be, because the Responses schema requires
// them and SDKs that validate reject a usage without them.
func (u Usage) ResponsesJSON() []byte {
	o := newObject(160)
	putCount(o, "input_tokens", u.Input)
	in := newObject(64)
	putCount(in, "cached_tokens", u.Cached)
	putCount(in, "cache_write_tokens", u.CacheWrite)
	o.member("input_tokens_details", in.String())
	putCount(o, "output_tokens", u.Output)
	out := newObject(32)
	putCount(out, "reasoning_tokens", u.Reasoning)
	o.member("output_tokens_details", out.String())
	putCount(o, "total_tokens", u.Total)
	return o.bytes()
}

func putCount(o *object, key string, c Count) {
	if c.Known {
		o.int(key, c.N)
	}
}

// Anthropic counts input_tokens without the cache: its prompt is
// input_tokens + cache_read_input_tokens + cache_creation_input_tokens. So
// the known cache counts are taken out of the Responses input count, and the
// three still add up to what the provider reported. Anthropic requires
// input_tokens and output_tokens, so an unknown one is written as 0; the
// optional cache counts are left out when unknown, so a client can tell
// "no cache" (0) from "not reported" (absent).
func (u Usage) messagesJSON() string {
	input := u.Input.N
	if u.Cached.Known {
		input -= u.Cached.N
	}
	if u.CacheWrite.Known {
		input -= u.CacheWrite.N
	}
	o := newObject(120)
	o.int("input_tokens", max(input, 0))
	putCount(o, "cache_creation_input_tokens", u.CacheWrite)
	putCount(o, "cache_read_input_tokens", u.Cached)
	o.int("output_tokens", u.Output.N)
	return o.String()
}

// usageCountPaths are the counts a Responses usage carries, as gjson paths.
var usageCountPaths = [...]string{
	"input_tokens", "input_tokens_details.cached_tokens", "input_tokens_details.cache_write_tokens",
	"output_tokens", "output_tokens_details.reasoning_tokens", "total_tokens",
}

// normalizeUsage writes a provider's usage object through Usage for the
// wire: a count Usage does not know (null, or not a number) is removed, as
// is a null details object, and everything else keeps its bytes, including
// fields Usage does not model (cache_write_tokens_details, a provider's
// cost). The captured response is not changed; only the copy on the wire.
func normalizeUsage(usage string) string {
	u := gjson.Parse(usage)
	if !u.IsObject() {
		return usage
	}
	out := usage
	for _, p := range usageCountPaths {
		if v := u.Get(p); v.Exists() && !countOf(v).Known {
			out, _ = sjson.Delete(out, p) // p is a fixed, valid path
		}
	}
	for _, p := range [...]string{"input_tokens_details", "output_tokens_details"} {
		if v := u.Get(p); v.Exists() && v.Type == gjson.Null {
			out, _ = sjson.Delete(out, p)
		}
	}
	return out
}
