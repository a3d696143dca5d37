package main

import (
	"strings"
	"testing"
)

// TestLegacyNamesRunRealCommands: every legacy script name maps to a gym
// command (and its flags) that exists.
func TestLegacyNamesRunRealCommands(t *testing.T) {
	root := newCmdRoot(testFactory(t))
	for name, tokens := range legacyCommands {
		var path, flags []string
		for _, tok := range tokens {
			if strings.HasPrefix(tok, "-") || len(flags) > 0 {
				flags = append(flags, tok)
			} else {
				path = append(path, tok)
			}
		}
		cmd, rest, err := root.Find(path)
		if err != nil || len(rest) > 0 {
			t.Errorf("ng_%s → gym %s: no such command", name, strings.Join(tokens, " "))
			continue
		}
		cmd.InitDefaultHelpFlag()
		for _, f := range flags {
			if !strings.HasPrefix(f, "--") {
				continue // a flag's value
			}
			if cmd.Flags().Lookup(strings.TrimPrefix(f, "--")) == nil {
				t.Errorf("ng_%s → gym %s: %s has no %s", name, strings.Join(tokens, " "), cmd.CommandPath(), f)
			}
		}
	}
}
