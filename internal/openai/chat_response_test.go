package openai

import (
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestChatToResponsesResponse(t *testing.T) {
	for _, f := range fixtures(t, "chat_response") {
		t.Run(f.name(), func(t *testing.T) {
			req, _ := f.get("request.json")
			got, err := ChatToResponsesResponse(f.must(t, "chat.json"), req, f.opts(t))
			if _, wantErr := f.get("error"); wantErr || (*update && err != nil) {
				f.checkError(t, err)
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
			if !gjson.ValidBytes(got) {
				t.Fatalf("output is not JSON: %s", got)
			}
			f.check(t, "want.json", normalizeIDs(got), true)
		})
	}
}

func TestChatToResponsesIDsAndTime(t *testing.T) {
	chat := []byte(`{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}]}`)
	before := time.Now().Unix()
	a, err := ChatToResponsesResponse(chat, nil, ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ChatToResponsesResponse(chat, nil, ChatOptions{})
	if !randomIDs.MatchString(`"` + gjson.GetBytes(a, "id").Str + `"`) {
		t.Errorf("id %s is not resp_<32 hex>", gjson.GetBytes(a, "id").Str)
	}
	if gjson.GetBytes(a, "id").Str == gjson.GetBytes(b, "id").Str {
		t.Error("two responses share an id")
	}
	if c := gjson.GetBytes(a, "created_at").Int(); c < before || c > time.Now().Unix() {
		t.Errorf("created_at %d is not now", c)
	}
}
