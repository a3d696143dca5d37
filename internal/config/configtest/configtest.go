// Package configtest builds resolved configs for tests of the packages
// that read their settings from one.
package configtest

import (
	"context"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Settings is the settings of a config made of nothing but the override
// tokens, loaded offline in an empty directory.
func Settings(t testing.TB, tokens ...string) config.Settings {
	t.Helper()
	dir := t.TempDir()
	env := config.Env{Cwd: dir, Roots: resolve.NewRoots("", dir, dir), LookupEnv: func(string) (string, bool) { return "", false }}
	res, err := config.Load(context.Background(), env, config.Request{Overrides: tokens, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	return config.Settings{Result: res}
}
