// Package server is the runtime every Go-native Gym server process runs in:
// it reads the process's config section from the environment `gym env start`
// sets, serves a component's handler behind the middleware every NeMo Gym
// server has (liveness, session cookies, error mapping, rollout-prefix
// routes), and gives components an HTTP client for calls to other servers
// and to upstream model endpoints.
package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Factory builds a component's handler from its runtime. It runs before the
// dry-run check, so a dry run validates everything a factory checks.
type Factory func(rt *Runtime) (http.Handler, error)

type registration struct {
	className  string
	factory    Factory
	configKeys map[string]bool
}

// The registry is package state (with machineAddrs, the only other):
// components fill it from init and `gym serve` reads it, so a mutex keeps a
// late Register honest.
var (
	registryMu sync.RWMutex
	registry   = map[string]registration{}
)

// Register makes a Go implementation available to `gym serve` under kind,
// `<server_type>/<implementation>` as in the config (for example
// `responses_api_models/openai_model`). className is the name of the NeMo
// Gym server class the component stands in for (`SimpleModelServer`); it
// names the session cookie and error messages (`<className>___<instance>`),
// so mixed Go/Python deployments line up. configKeys are the keys of its
// config section the implementation reads beyond BaseConfigKeys; under
// `builtin_servers: prefer` a Python server of the same kind gives way to
// it only when its section sets no other key. Components call Register from
// init; a bad or duplicate registration is a programming error and panics.
func Register(kind, className string, f Factory, configKeys ...string) {
	typ, impl, ok := strings.Cut(kind, "/")
	if !ok || typ == "" || impl == "" || strings.Contains(impl, "/") {
		panic(fmt.Sprintf("server.Register: kind %q must be <server_type>/<implementation>", kind))
	}
	if className == "" || !validCookieName(className) {
		panic(fmt.Sprintf("server.Register(%q): class name %q must be a non-empty HTTP token (it names the session cookie)", kind, className))
	}
	if f == nil {
		panic(fmt.Sprintf("server.Register(%q): nil factory", kind))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[kind]; dup {
		panic(fmt.Sprintf("server.Register: %q registered twice", kind))
	}
	keys := make(map[string]bool, len(configKeys))
	for _, k := range configKeys {
		keys[k] = true
	}
	registry[kind] = registration{className: className, factory: f, configKeys: keys}
}

// BaseConfigKeys are the keys every server section may set that need no
// reading by a Go implementation: the launcher's (entrypoint, host, port,
// name), the datasets and catalog metadata of the listings, and
// num_workers, which sizes a Python server's uvicorn workers and which a
// Go server, concurrent in one process, has no use for.
var BaseConfigKeys = []string{
	"entrypoint", "host", "port", "name", "num_workers",
	"domain", "description", "value", "verified", "verified_url", "datasets",
}

// UnknownConfigKeys lists, in section order, the keys of a server section
// that the Go implementation registered as kind does not read; registered
// is false when there is none.
func UnknownConfigKeys(kind string, section *tree.Node) (unknown []string, registered bool) {
	reg, ok := lookup(kind)
	if !ok {
		return nil, false
	}
	for _, k := range section.Keys() {
		if !reg.configKeys[k] && !slices.Contains(BaseConfigKeys, k) {
			unknown = append(unknown, k)
		}
	}
	return unknown, true
}

// ConfigKeys lists the keys kind registered, sorted.
func ConfigKeys(kind string) []string {
	reg, _ := lookup(kind)
	keys := make([]string, 0, len(reg.configKeys))
	for k := range reg.configKeys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Lookup returns the factory registered under kind.
func Lookup(kind string) (Factory, bool) {
	reg, ok := lookup(kind)
	return reg.factory, ok
}

func lookup(kind string) (registration, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	reg, ok := registry[kind]
	return reg, ok
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	kinds := make([]string, 0, len(registry))
	for k := range registry {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}
