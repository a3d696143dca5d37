package inferenceprovider

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

// A hosted provider answers Chat Completions with reasoning in a
// `reasoning` field; the Responses answer carries it as a reasoning item.
func TestResponsesThroughAProvider(t *testing.T) {
	var sent, auth string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sent, auth = string(b), r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"Paris","reasoning":"capital of France"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`)
	}))
	defer up.Close()
	yaml := "policy_model:\n  responses_api_models:\n    inference_provider:\n      entrypoint: app.py\n      host: 127.0.0.1\n      port: 0\n" +
		"      base_url: " + up.URL + "/v1\n      api_key: sk-p\n      model: org/model\n      extra_body: {top_k: 20}\n"
	rt, err := servertest.Runtime(yaml, "policy_model")
	if err != nil {
		t.Fatal(err)
	}
	rt.Logger = slog.New(slog.DiscardHandler)
	h, err := New(rt)
	if err != nil {
		t.Fatal(err)
	}
	gym := httptest.NewServer(server.Wrap(rt, h))
	defer gym.Close()
	resp, err := http.Post(gym.URL+"/v1/responses", "application/json", strings.NewReader(`{"input":"capital of France?","top_k":5}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if auth != "Bearer sk-p" || gjson.Get(sent, "model").String() != "org/model" || gjson.Get(sent, "top_k").Int() != 5 {
		t.Errorf("upstream got %q %s", auth, sent)
	}
	if gjson.GetBytes(body, `output.#(type=="reasoning")`).Exists() == false ||
		gjson.GetBytes(body, `output.#(type=="message").content.0.text`).String() != "Paris" {
		t.Errorf("response: %s", body)
	}
}
