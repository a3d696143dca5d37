package openai

import (
	"errors"
	"strings"
	"testing"
)

// Every programmatic tool calling construct is an UnrepresentableError naming
// its field, in the chat and the Anthropic conversions, and
// drop_unrepresentable_request_fields does not make it go away.
func TestProgrammaticToolCallingRejected(t *testing.T) {
	for _, f := range fixtures(t, "programmatic") {
		t.Run(f.name(), func(t *testing.T) {
			checked := 0
			for _, drop := range []bool{false, true} {
				opts := ChatOptions{DropUnrepresentable: drop}
				if in, ok := f.get("responses.json"); ok {
					_, err := ResponsesToChatRequest(in, opts)
					wantUnrepresentable(t, "ResponsesToChatRequest", err, f.must(t, "responses_field"), chatAPI)
					checked++
				}
				if in, ok := f.get("messages.json"); ok {
					_, err := MessagesToResponsesRequest(in, opts)
					wantUnrepresentable(t, "MessagesToResponsesRequest", err, f.must(t, "messages_field"), anthropicAPI)
					checked++
				}
			}
			if in, ok := f.get("output.json"); ok {
				_, err := ResponsesToMessagesResponse(in, "m")
				wantUnrepresentable(t, "ResponsesToMessagesResponse", err, f.must(t, "output_field"), anthropicAPI)
				checked++
			}
			if checked == 0 {
				t.Fatal("fixture exercises nothing")
			}
		})
	}
}

func wantUnrepresentable(t *testing.T, fn string, err error, field []byte, api string) {
	t.Helper()
	var u *UnrepresentableError
	if !errors.As(err, &u) {
		t.Fatalf("%s: err = %v, want an UnrepresentableError", fn, err)
	}
	if u.Field != string(field) {
		t.Errorf("%s: Field = %q, want %q", fn, u.Field, field)
	}
	if strings.Contains(u.Reason, "drop_unrepresentable") {
		t.Errorf("%s: the reason suggests the drop option, which cannot help: %s", fn, u.Reason)
	}
	if !strings.Contains(u.Error(), api) || !strings.HasPrefix(u.Error(), u.Field+": ") {
		t.Errorf("%s: message %q should name the field and %s", fn, u.Error(), api)
	}
}
