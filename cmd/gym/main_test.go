package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"gym": func() { os.Exit(run(os.Args[1:])) },
	})
}

// TestScripts runs the CLI behaviour tests in testdata/script. Each script
// runs in its own $WORK directory with an empty install root unless it sets
// GYM_INSTALL_ROOT itself.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			install := env.WorkDir + "/.install"
			if err := os.MkdirAll(install, 0o755); err != nil {
				return err
			}
			env.Setenv("GYM_INSTALL_ROOT", install)
			env.Setenv("NEMO_GYM_EXTRA_ROOTS", "")
			env.Setenv("HOME", env.WorkDir+"/.home")
			env.Setenv("NO_COLOR", "1")
			return nil
		},
	})
}
