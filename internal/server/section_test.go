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
