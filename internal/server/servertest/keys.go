// Package servertest holds the checks every Go server registration's tests
// share.
package servertest

import (
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

// ConfigKeysAreRead checks the promise a registration's config keys make
// to `builtin_servers: prefer`: each is read and checked by the factory.
// configYAML is a whole config in which instance is a valid server of
// kind; the factory must accept it, then refuse it, naming the key, with
// any one registered key set to a list of lists, which no key of a Go
// server takes. It proves a key is read and type-checked, not that every
// value of it is supported: a key a server reads only to refuse some value
// must not be registered.
func ConfigKeysAreRead(t testing.TB, kind, instance, configYAML string) {
	t.Helper()
	factory, ok := server.Lookup(kind)
	if !ok {
		t.Fatalf("%s is not registered", kind)
	}
	keys := server.ConfigKeys(kind)
	build := func(set string) error {
		rt, err := Runtime(configYAML, instance)
		if err != nil {
			t.Fatalf("runtime of %s: %v", instance, err)
		}
		if set != "" {
			rt.Config.Set(set, tree.NewList(tree.NewList(tree.NewInt(1))))
		}
		_, err = factory(rt)
		return err
	}
	if err := build(""); err != nil {
		t.Fatalf("%s refuses the valid config: %v", kind, err)
	}
	for _, k := range keys {
		err := build(k)
		switch {
		case err == nil:
			t.Errorf("%s registered config key %q but took [[1]] for it: the factory does not read or check it", kind, k)
		case !strings.Contains(err.Error(), instance+"."+k):
			t.Errorf("%s refused [[1]] for %q without naming the key: %v", kind, k, err)
		}
	}
}
