package config

import "testing"

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pass@host:8000/v1":                         "http://user:xxxxx@host:8000/v1",
		"https://user:@host/v1":                                 "https://user:xxxxx@host/v1",
		"https://sk-bare-token@host/v1":                         "https://xxxxx@host/v1",
		"https://u:p@ss@host/v1/a@b":                            "https://u:xxxxx@host/v1/a@b",
		"https://host/v1/openai?key=AIza1&alt=sse":              "https://host/v1/openai?key=xxxxx&alt=sse",
		"https://host/v1?api-key=a&api-version=2024-10-21":      "https://host/v1?api-key=xxxxx&api-version=2024-10-21",
		"https://host/v1?token=a&access_token=b&api_key=c&flag": "https://host/v1?token=xxxxx&access_token=xxxxx&api_key=xxxxx&flag",
		"https://host/o?sig=a&X-Amz-Signature=b&X-Amz-Credential=c&X-Amz-Security-Token=d&se=2030": "https://host/o?sig=xxxxx&X-Amz-Signature=xxxxx&X-Amz-Credential=xxxxx&X-Amz-Security-Token=xxxxx&se=2030",
		"https://host/v1?Api%2DKey=a#frag?key=b":                                                   "https://host/v1?Api%2DKey=xxxxx#frag?key=b",
		"https://host/v1?max_tokens=5&author=me":                                                   "https://host/v1?max_tokens=5&author=me",
		"http://127.0.0.1:8000/v1":                                                                 "http://127.0.0.1:8000/v1",
		"user:pass@host/v1":                                                                        "user:xxxxx@host/v1",
		"":                                                                                         "",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
