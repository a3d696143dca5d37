package server

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/config"
)

func TestJSONObjectKeepsIntegersOfAnySize(t *testing.T) {
	node, err := config.ParseChildConfig("extra_body: {seed: 123456789012345678901234567890, n: 3, f: 0.5}\n")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Section{Instance: "m", Node: node}.JSONObject("extra_body")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"seed":123456789012345678901234567890,"n":3,"f":0.5}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Booleans are read as pydantic's lax mode reads them: 0.0 and 1.0 too
// (nemo-gym's pydantic, asked in the oracle root, takes them and refuses
// 2.0 and 1.5).
func TestBoolIsPydanticsLaxBool(t *testing.T) {
	for text, want := range map[string]any{
		"true": true, "1": true, "1.0": true, "0.0": false, "'yes'": true, "' off '": false,
		"2": nil, "2.0": nil, "1.5": nil, "maybe": nil,
	} {
		node, err := config.ParseChildConfig("flag: " + text + "\n")
		if err != nil {
			t.Fatal(err)
		}
		got, err := Section{Instance: "m", Node: node}.Bool("flag", false)
		if want == nil {
			if err == nil {
				t.Errorf("flag: %s read as %v, want an error", text, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("flag: %s read as %v, %v; want %v", text, got, err, want)
		}
	}
}
