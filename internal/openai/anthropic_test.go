package openai

import (
	"testing"
)

func TestMessagesToResponsesRequest(t *testing.T) {
	for _, f := range fixtures(t, "anthropic_request") {
		t.Run(f.name(), func(t *testing.T) {
			got, err := MessagesToResponsesRequest(f.must(t, "request.json"), f.opts(t))
			if _, wantErr := f.get("error"); wantErr || (*update && err != nil) {
				f.checkError(t, err)
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
			f.check(t, "want.json", normalizeIDs(got), true)
		})
	}
}

func TestResponsesToMessagesResponse(t *testing.T) {
	for _, f := range fixtures(t, "anthropic_response") {
		t.Run(f.name(), func(t *testing.T) {
			model, _ := f.get("model")
			got, err := ResponsesToMessagesResponse(f.must(t, "response.json"), string(model))
			if _, wantErr := f.get("error"); wantErr || (*update && err != nil) {
				f.checkError(t, err)
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
			f.check(t, "want.json", normalizeIDs(got), true)
		})
	}
}
