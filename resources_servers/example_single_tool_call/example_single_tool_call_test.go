package examplesingletoolcall

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
	"github.com/nemo-gym-go/gym/internal/server"
)

func start(t testing.TB) *resourcestest.Server {
	cfg, err := os.ReadFile("configs/example_single_tool_call.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The registered factory, as `gym serve` finds it.
	factory, ok := server.Lookup(Kind)
	if !ok {
		t.Fatalf("%s is not registered", Kind)
	}
	return resourcestest.Start(t, string(cfg), "example_single_tool_call", ClassName, factory)
}

func TestGetWeather(t *testing.T) {
	s := start(t)
	tests := []struct {
		name   string
		body   string
		status int
		want   string
	}{
		{"city", `{"city": "SF"}`, 200, `{"city":"SF","weather_description":"The weather in SF is cold."}`},
		{"unicode city", `{"city": "Zürich <3"}`, 200, `{"city":"Zürich <3","weather_description":"The weather in Zürich <3 is cold."}`},
		{"extra arguments are ignored", `{"city": "Oslo", "units": "C"}`, 200, `{"city":"Oslo","weather_description":"The weather in Oslo is cold."}`},
		{"missing city", `{}`, 422, `{"detail":[{"type":"missing","loc":["body","city"],"msg":"Field required","input":{}}]}`},
		{"city not a string", `{"city": 7}`, 422, `{"detail":[{"type":"string_type","loc":["body","city"],"msg":"Input should be a valid string","input":7}]}`},
		{"not an object", `["SF"]`, 422, `{"detail":[{"type":"model_attributes_type","loc":["body"],"msg":"Input should be a valid dictionary or object to extract fields from","input":["SF"]}]}`},
		{"not JSON", `{"city": }`, 422, `{"detail":[{"type":"json_invalid","loc":["body",9],"msg":"JSON decode error","input":{},"ctx":{"error":"invalid character '}' looking for beginning of value"}}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := s.Post("/get_weather", tc.body)
			if status != tc.status || string(body) != tc.want {
				t.Errorf("POST /get_weather %s\n got %d %s\nwant %d %s", tc.body, status, body, tc.status, tc.want)
			}
		})
	}
}

// TestRecordedRollouts re-verifies every recorded rollout (nemo-gym 0.7.0's
// rewards: 1.0 for the three that called get_weather), and the reply is the request's two objects plus reward
// (errata E1), nothing of the row echoed besides.
func TestRecordedRollouts(t *testing.T) {
	s := start(t)
	rows := resourcestest.ReadJSONL(t, "data/example_rollouts.jsonl")
	if len(rows) != 5 {
		t.Fatalf("expected 5 recorded rollouts, got %d", len(rows))
	}
	for i, row := range rows {
		status, body := s.Post("/verify", row)
		if status != 200 {
			t.Fatalf("row %d: status %d: %s", i+1, status, body)
		}
		var reply map[string]json.RawMessage
		if err := json.Unmarshal(body, &reply); err != nil {
			t.Fatal(err)
		}
		if string(reply["reward"]) != string(row["reward"]) {
			t.Errorf("row %d: reward %s, recorded %s", i+1, reply["reward"], row["reward"])
		}
		if len(reply) != 3 || !strings.HasPrefix(string(body), `{"responses_create_params":`) {
			t.Errorf("row %d: reply keys %v, want responses_create_params, response, reward", i+1, keys(reply))
		}
		if !resourcestest.JSONEqual(reply["response"], row["response"]) {
			t.Errorf("row %d: response not echoed as sent", i+1)
		}
	}
}

func TestBaseRoutes(t *testing.T) {
	s := start(t)
	if status, body := s.Post("/seed_session", `{"responses_create_params": {"input": []}, "anything": 1}`); status != 200 || string(body) != "{}" {
		t.Errorf("seed_session: %d %s", status, body)
	}
	resp, err := s.Client.Get(s.URL + "/reverify_mode")
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	json.NewDecoder(resp.Body).Decode(&mode)
	resp.Body.Close()
	if mode != "unknown" {
		t.Errorf("reverify_mode = %q, want unknown, as NeMo Gym's", mode)
	}
	if status, body := s.Post("/verify", `{"response": {"output": []}}`); status != 422 || !strings.Contains(string(body), `"loc":["body","responses_create_params"]`) {
		t.Errorf("verify without responses_create_params: %d %s", status, body)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func BenchmarkVerify(b *testing.B) {
	s := start(b)
	rows := resourcestest.ReadJSONL(b, "data/example_rollouts.jsonl")
	body, _ := json.Marshal(rows[0])
	b.ResetTimer()
	for b.Loop() {
		if status, reply := s.Post("/verify", body); status != 200 {
			b.Fatalf("%d %s", status, reply)
		}
	}
}

func TestRegistered(t *testing.T) {
	if _, ok := server.Lookup(Kind); !ok {
		t.Fatalf("%s is not registered", Kind)
	}
}

// TestServe runs the server the way `gym serve` does: from the config and
// instance name in the environment, on its configured port.
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg, err := os.ReadFile("configs/example_single_tool_call.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dict := strings.Replace(string(cfg), "      domain: agent\n", fmt.Sprintf("      domain: agent\n      host: 127.0.0.1\n      port: %d\n", port), 1)
	env := map[string]string{"NEMO_GYM_CONFIG_DICT": dict, "NEMO_GYM_CONFIG_PATH": "example_single_tool_call"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Main(ctx, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d/get_weather", port)
	var resp *http.Response
	for range 200 {
		if resp, err = http.Post(url, "application/json", strings.NewReader(`{"city":"Paris"}`)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != `{"city":"Paris","weather_description":"The weather in Paris is cold."}` ||
		!strings.HasPrefix(resp.Header.Get("Set-Cookie"), "SimpleWeatherResourcesServer___example_single_tool_call=") {
		t.Errorf("%s %s", body, resp.Header.Get("Set-Cookie"))
	}
}

// TestVerifierCases runs the server's verifier fixture (nemo-gym 0.7.0's
// format, as gym env test runs it): a get_weather call scores 1, an answer
// without one 0, and a request without a response is refused naming it.
func TestVerifierCases(t *testing.T) {
	s := start(t)
	for _, c := range resourcestest.ReadJSONL(t, "tests/verifier_cases.jsonl") {
		var name, kind, wantErr string
		json.Unmarshal(c["name"], &name)
		json.Unmarshal(c["kind"], &kind)
		json.Unmarshal(c["expected_error"], &wantErr)
		t.Run(name, func(t *testing.T) {
			status, body := s.Post("/verify", c["request"])
			if kind == "malformed" {
				if status != 422 || !strings.Contains(string(body), fmt.Sprintf("%q", wantErr)) {
					t.Errorf("status %d %s, want a 422 naming %q", status, body, wantErr)
				}
				return
			}
			var reply struct{ Reward json.RawMessage }
			if err := json.Unmarshal(body, &reply); status != 200 || err != nil {
				t.Fatalf("status %d %s", status, body)
			}
			if got, want := string(reply.Reward), string(c["expected_reward"]); got != want {
				t.Errorf("reward %s, want %s", got, want)
			}
		})
	}
}
