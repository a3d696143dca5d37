package openai

import (
	"fmt"
	"strings"
	"testing"
)

// benchRequest is a Responses request of about size bytes: a multi-turn
// tool loop with reasoning, as an agent sends it late in a rollout.
func benchRequest(size int) []byte {
	var items []string
	items = append(items, `{"role":"user","content":"Plan a trip through five cities and check the weather in each."}`)
	for i := 0; len(strings.Join(items, ",")) < size-600; i++ {
		items = append(items,
			fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[{"type":"summary_text","text":"Step %d: the next city needs a weather lookup before deciding the route."}]}`, i, i),
			fmt.Sprintf(`{"type":"function_call","id":"fc_%d","call_id":"call_%d","name":"get_weather","arguments":"{\"city\":\"City %d\",\"units\":\"metric\"}","status":"completed","caller":{"type":"direct"}}`, i, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":"{\"temperature\":%d,\"conditions\":\"partly cloudy with light wind from the north-west\"}"}`, i, 10+i%20),
		)
	}
	return []byte(`{"model":"client-model","instructions":"You are a travel planner.","input":[` + strings.Join(items, ",") +
		`],"tools":[{"type":"function","name":"get_weather","description":"Current weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"units":{"type":"string","enum":["metric","imperial"]}},"required":["city"]},"strict":true}],"tool_choice":"auto","temperature":0.7,"top_p":0.95,"max_output_tokens":4096}`)
}

// benchResponse is a Responses object of about size bytes in which every
// third reasoning part is a provider's miscast output_text.
func benchResponse(size int) []byte {
	var items []string
	for i := 0; len(strings.Join(items, ",")) < size-400; i++ {
		part := `{"type":"reasoning_text","text":"Considering the constraints of the problem carefully, one step at a time."}`
		if i%3 == 0 {
			part = `{"type":"output_text","text":"Considering the constraints of the problem carefully, one step at a time.","annotations":[]}`
		}
		items = append(items,
			fmt.Sprintf(`{"id":"rs_%d","type":"reasoning","summary":[],"content":[%s],"encrypted_content":"gAAAAABn%06d"}`, i, part, i),
			fmt.Sprintf(`{"id":"msg_%d","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Partial answer number %d with some explanation text.","annotations":[]}]}`, i, i),
		)
	}
	return []byte(`{"id":"resp_1","object":"response","created_at":1730000000,"status":"completed","model":"m","output":[` + strings.Join(items, ",") +
		`],"usage":{"input_tokens":12000,"input_tokens_details":{"cached_tokens":8000},"output_tokens":900,"output_tokens_details":{"reasoning_tokens":600},"total_tokens":12900}}`)
}

func benchChat() []byte {
	content := strings.Repeat("The weather in each city is mild; the route can go north first. ", 60)
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1730000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"<think>` +
		strings.Repeat("Check every city before routing. ", 40) + `</think>` + content +
		`","tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},{"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5000,"completion_tokens":800,"total_tokens":5800}}`)
}

func BenchmarkSetModelMergeUnder(b *testing.B) {
	req := benchRequest(20 << 10)
	extra := []byte(`{"max_output_tokens":null,"top_k":20,"chat_template_kwargs":{"enable_thinking":true}}`)
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		body, err := SetModel(req, "Qwen/Qwen3-235B-A22B")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := MergeUnder(body, extra); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFixProviderReasoning(b *testing.B) {
	resp := benchResponse(50 << 10)
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		FixProviderReasoning(resp)
	}
}

func BenchmarkFixProviderReasoningNothingToFix(b *testing.B) {
	resp := FixProviderReasoning(benchResponse(50 << 10))
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		FixProviderReasoning(resp)
	}
}

// An answer with a message and no reasoning item, as most are.
func BenchmarkFixProviderReasoningPlainAnswer(b *testing.B) {
	resp := []byte(`{"id":"resp_1","object":"response","created_at":1730000000,"status":"completed","model":"m","reasoning":{"effort":null,"summary":null},` +
		`"output":[{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"` +
		strings.Repeat("The weather in each city is mild. ", 12) + `","annotations":[]}]}],"usage":{"input_tokens":120,"output_tokens":90,"total_tokens":210}}`)
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		FixProviderReasoning(resp)
	}
}

func BenchmarkResponsesToChatRequest(b *testing.B) {
	req := benchRequest(20 << 10)
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ResponsesToChatRequest(req, ChatOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChatToResponsesResponse(b *testing.B) {
	chat, req := benchChat(), benchRequest(20<<10)
	b.SetBytes(int64(len(chat)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ChatToResponsesResponse(chat, req, ChatOptions{ParseThink: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSynthesizeResponsesSSE(b *testing.B) {
	resp, err := ChatToResponsesResponse(benchChat(), benchRequest(20<<10), ChatOptions{ParseThink: true})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		SynthesizeResponsesSSE(resp)
	}
}

// The benchmark payloads are what they claim to be.
func TestBenchPayloads(t *testing.T) {
	req, resp := benchRequest(20<<10), benchResponse(50<<10)
	if n := len(req); n < 19<<10 || n > 21<<10 {
		t.Errorf("request is %d bytes", n)
	}
	if n := len(resp); n < 49<<10 || n > 51<<10 {
		t.Errorf("response is %d bytes", n)
	}
	if _, err := ResponsesToChatRequest(req, ChatOptions{}); err != nil {
		t.Error(err)
	}
	if fixed := FixProviderReasoning(resp); len(fixed) <= len(resp) {
		t.Error("nothing to fix in the response benchmark")
	}
}
