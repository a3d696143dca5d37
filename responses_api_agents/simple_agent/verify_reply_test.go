package simpleagent

import (
	"strings"
	"testing"
)

// A /verify reply needs the request and response objects and a numeric
// reward; of a repeated member the first counts, as gjson.Get reads it.
func TestCheckVerifyResponse(t *testing.T) {
	for _, tc := range []struct{ body, err string }{
		{`{"responses_create_params":{},"response":{"id":"r"},"reward":1.0}`, ""},
		{`{"reward":0,"response":{},"responses_create_params":{"input":[]}}`, ""},
		{`[1]`, "not a JSON object"},
		{`{"response":{},"reward":1}`, "no responses_create_params object"},
		{`{"responses_create_params":[],"response":{},"reward":1}`, "no responses_create_params object"},
		{`{"responses_create_params":{},"reward":1}`, "no response object"},
		{`{"responses_create_params":{},"response":{}}`, "no numeric reward"},
		{`{"responses_create_params":{},"response":{},"reward":"1"}`, "no numeric reward"},
		{`{"responses_create_params":{},"response":{},"reward":"1","reward":1}`, "no numeric reward"},
		{`{"responses_create_params":{},"response":null,"response":{},"reward":1}`, "no response object"},
		{`{"responses_create_params":{},"response":{},"nested":{"reward":"x"},"reward":1}`, ""},
	} {
		err := checkVerifyResponse([]byte(tc.body))
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.err)
		}
	}
}

// A good reply is read where it lies: every rollout gets one, holding the
// whole transcript, and copying it to read three members was an
// allocation the size of the reply.
func TestCheckVerifyResponseAllocatesNothing(t *testing.T) {
	body := []byte(`{"responses_create_params":{"input":"q"},"response":{"output":[{"type":"message","content":[{"type":"output_text","text":"an answer"}]}]},"reward":1.0}`)
	if allocs := testing.AllocsPerRun(20, func() {
		if err := checkVerifyResponse(body); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per reply, want 0", allocs)
	}
}
