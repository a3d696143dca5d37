package openaimodel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The official Go client (openai-go v3) against the server, under a rollout
// prefix as an agent would address it.
func TestOpenAIGoClient(t *testing.T) {
	up := newFakeUpstream(t)
	gym := startGym(t, up.URL, `session_key_headers: [X-Session]`)
	client := openai.NewClient(
		option.WithBaseURL(gym+"/ng-rollout/5-2-a1/v1/"),
		option.WithAPIKey("client-key"),
		// Retries would hide a failure of the server under test.
		option.WithMaxRetries(0),
	)
	ctx := t.Context()
	input := responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}
	messages := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}

	t.Run("responses", func(t *testing.T) {
		r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "client-model", Input: input})
		if err != nil {
			t.Fatal(err)
		}
		if r.Model != "served-model" || r.OutputText() != "Hello from upstream" {
			t.Errorf("model %q, text %q", r.Model, r.OutputText())
		}
		if r.Output[0].Type != "reasoning" || r.Output[0].Content[0].Type != "reasoning_text" {
			t.Errorf("reasoning item %s, want its part fixed to reasoning_text", r.Output[0].RawJSON())
		}
	})
	t.Run("responses streaming", func(t *testing.T) {
		stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "client-model", Input: input})
		defer stream.Close()
		var text strings.Builder
		var types []string
		for stream.Next() {
			ev := stream.Current()
			types = append(types, ev.Type)
			if ev.Type == "response.output_text.delta" {
				text.WriteString(ev.Delta)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if text.String() != "Hello from upstream" || len(types) != len(responsesEvents) || types[len(types)-1] != "response.completed" {
			t.Errorf("text %q, events %v", text.String(), types)
		}
	})
	t.Run("chat completions", func(t *testing.T) {
		c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "client-model", Messages: messages})
		if err != nil {
			t.Fatal(err)
		}
		if c.Model != "served-model" || c.Choices[0].Message.Content != "Hello from upstream" {
			t.Errorf("model %q, content %q", c.Model, c.Choices[0].Message.Content)
		}
	})
	t.Run("chat completions streaming", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "client-model", Messages: messages})
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello from upstream" || acc.Choices[0].FinishReason != "stop" {
			t.Errorf("accumulated %+v", acc.Choices)
		}
	})

	for _, r := range up.requests() {
		if r.Header.Get("X-Session") != "5-2-a1" || r.Header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("upstream %s: X-Session %q, Authorization %q", r.Path, r.Header.Get("X-Session"), r.Header.Get("Authorization"))
		}
	}
}

// The official Node client (test/clients) against the server. CI installs
// it with `npm ci --prefix test/clients` before `go test`.
func TestOpenAINodeClient(t *testing.T) {
	dir := filepath.Join("..", "..", "test", "clients")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Skip("the Node OpenAI client is not installed; run `npm ci --prefix test/clients` to include it")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH; the Node OpenAI client test needs Node 20 or newer")
	}
	up := newFakeUpstream(t)
	gym := startGym(t, up.URL)
	cmd := exec.CommandContext(t.Context(), node, "--test", "openai_client.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GYM_MODEL_URL="+gym+"/v1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# pass 4") {
		t.Errorf("expected 4 passing Node tests:\n%s", out)
	}
	if n := len(up.requests()); n != 4 {
		t.Errorf("the upstream saw %d requests, want 4", n)
	}
}
