package openai

import "testing"

func TestResponsesToChatRequest(t *testing.T) {
	for _, f := range fixtures(t, "chat_request") {
		t.Run(f.name(), func(t *testing.T) {
			got, err := ResponsesToChatRequest(f.must(t, "request.json"), f.opts(t))
			if _, wantErr := f.get("error"); wantErr || (*update && err != nil) {
				f.checkError(t, err)
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
			f.check(t, "want.json", got, true)
		})
	}
}
