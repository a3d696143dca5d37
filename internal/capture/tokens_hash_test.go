package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The goldens are NeMo Gym 0.7.0's own: assistant_fingerprint,
// conversation_digest, compute_digest, canonicalize_tool_arguments and
// json.dumps(sort_keys=True) of the same values (orjson 3.13, as nemo-gym
// 0.7.0 installs it, writes 1e16 as 1e+16).
func TestLineageHashes(t *testing.T) {
	tests := []struct{ items, fingerprint, context string }{
		{`[{"role": "user", "content": "q"}, {"role": "assistant", "content": "hi"}]`,
			"b80a5946522fe7596e5abfe49534af0cceda452c67e496075a092c20c9ab9d67", "12539a8c7ac04b77a8829cf89cba50a1bc7291e17e9eb8f52b83d418bcc96833"},
		{`[{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi", "annotations": []}]}]`,
			"b80a5946522fe7596e5abfe49534af0cceda452c67e496075a092c20c9ab9d67", "d6a8ebb2001c88d9b448d99b87b089e4ee518dc6df6b4ac529652bfbff38f427"},
		{`[{"role": "user", "content": "q"}, {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"b\": 1, \"a\": [1.0, \"é\", \"<&>\"]}", "id": "fc_1"}]`,
			"f21c5fbffd73c55d009a47aab26582c86af2768b742dd193a8e351c0b45de8fd", "fc2dbe6c5dff6abe2b4e096968618d81781819b4744b84bcfba9a28d454318fa"},
		{`[{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":[1.0,\"é\",\"<&>\"],\"b\":1}"}}]}]`,
			"f21c5fbffd73c55d009a47aab26582c86af2768b742dd193a8e351c0b45de8fd", "45697eeceb7758642dba42f280ee8ac8ba6a57d6735bc2872b2631fb5dc11ac7"},
		{`[{"role": "user", "content": "q"}, {"type": "function_call_output", "call_id": "c1", "output": "res"}]`,
			"", "325e01cff3cf2a42efe9f7a21161d98de2ff81f25121a2040443c8c35ab8ec10"},
		{`[{"role": "_ng_request_envelope", "content": "{\"instructions\": \"be brief \\u00e9\", \"tools\": null}"}, {"role": "user", "content": [{"type": "input_text", "text": "look"}, {"type": "input_image", "image_url": "data:x", "detail": "auto"}]}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "g", "input": {"z": 1, "y": [true, null]}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "r"}]}]}, {"role": "tool", "tool_call_id": "c9", "content": "  x "}, {"type": "function_call", "namespace": "ns", "name": "n", "call_id": "", "id": "fc9", "arguments": " not json "}]`,
			"ef7ff81c8383871af437b1f3428fa4d62eaf96079fb3c485b1fa90c5cb8f7dfb", "9de7203d9e4fb750cbd99e60d7c52916b00a3b38d8ac61b9d9f4d12aecb60682"},
	}
	for _, tt := range tests {
		v, err := parse([]byte(tt.items))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := assistantFingerprint(v.items); err != nil || got != tt.fingerprint {
			t.Errorf("assistantFingerprint(%s) = %s, %v; want %s", tt.items, got, err, tt.fingerprint)
		}
		if got, err := conversationDigest(v.items); err != nil || got != tt.context {
			t.Errorf("conversationDigest(%s) = %s, %v; want %s", tt.items, got, err, tt.context)
		}
	}

	for _, tt := range []struct {
		ids  []int64
		want string
	}{
		{nil, "2e222d36d0c6ae1db1ec18b3f96d9a46df5db61b40137bbfbac4cdf0acde9763"},
		{[]int64{1, 2, 3}, "bf99633051449f0f3248b4995a7c8468b9561d7732447341916085f12ff9ff54"},
		{[]int64{11, 12, 13, 14}, "75b134dbc32f55928a9817bffe4566e3fbbc2a416e10efbf8a2e7d0ff4c92103"},
	} {
		if got, err := tokenDigest(tt.ids); err != nil || got != tt.want {
			t.Errorf("tokenDigest(%v) = %s, %v; want %s", tt.ids, got, err, tt.want)
		}
	}
	if _, err := tokenDigest([]int64{-1}); err == nil {
		t.Error("a negative token id was hashed")
	}

	args := strValue(`{"b": 1, "a": [1.0, 1e16, "é"]}`)
	if got, want := toolArguments(args), `{"a":[1.0,1e+16,"é"],"b":1}`; got != want {
		t.Errorf("toolArguments = %s; want %s", got, want)
	}
	env, err := parse([]byte("{\"instructions\":\"é \U0001F600 \x7f\\n\",\"tools\":[{\"b\":1,\"a\":null}]}"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(env.appendPyDumps(nil)), `{"instructions": "\u00e9 \ud83d\ude00 \u007f\n", "tools": [{"a": null, "b": 1}]}`; got != want {
		t.Errorf("appendPyDumps = %s; want %s", got, want)
	}
}

// A damaged entry (a negative length) masks its rollout; it does not stop
// the collector.
func TestDamagedTokenEntries(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenTokens(dir)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(id, parent, resolution string, cumLen, ctxLen int) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return fmt.Sprintf(`{"continuation_context_digest":"d","continuation_context_len":%d,"continuation_fingerprint":"f","cum_len":%d,"digest":"x","fingerprint_version":2,"generation_log_probs":[-0.5],"generation_token_ids":[3],"model_call_id":%q,"output_items":[],"parent_call_id":%s,"parent_resolution":%q,"prompt_token_ids":[1,2],"rollout_id":"0-0","schema_version":1}`,
			ctxLen, cumLen, id, p, resolution)
	}
	lines := entry("p", "", "root", -1, -3) + "\n" + entry("c", "p", "resolved", 3, 0) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "0-0.tokens.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	row, build := s.Finalize([]byte(`{"response":{"id":"r","output":[]},"_ng_task_index":0,"_ng_rollout_index":0}`))
	if build == nil || !build.Masked || !strings.Contains(string(row), `"mask_sample":true`) || !strings.Contains(string(row), "cum_len -1 is negative") {
		t.Errorf("row %s, build %+v", row, build)
	}
}
