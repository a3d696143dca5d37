package rollout

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPromptApply(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prompt.yaml")
	if err := os.WriteFile(path, []byte("system: Be brief.\nuser: \"Q: {question}\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPrompt(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Apply([]byte(`{"question": "1+1?", "responses_create_params": {"temperature": 0.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"question": "1+1?", "responses_create_params": {"temperature": 0.5,"input":[{"role":"system","content":"Be brief."},{"role":"user","content":"Q: 1+1?"}]}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := p.Apply([]byte(`{"responses_create_params": {"input": "x"}, "question": "q"}`)); !errors.Is(err, ErrPromptAndInput) {
		t.Errorf("a row with its own input: err = %v", err)
	}
	if _, err := p.Apply([]byte(`{"query": "q"}`)); err == nil || !strings.Contains(err.Error(), "references field 'question'") {
		t.Errorf("a row without the field: err = %v", err)
	}
}
