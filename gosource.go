package gym

import "embed"

// GoSource is the part of gym's module a Go component outside it builds
// against: the public package gymserver, the internal packages it imports,
// and go.mod and go.sum. `gym env init --lang go` writes it (tests left
// out) to a cache directory the component's go.mod replaces gym's module
// with, since the module is on no proxy. TestGoSourceCoversGymserver keeps
// the list equal to gymserver's imports.
//
//go:embed go.mod go.sum
//go:embed gymserver/*.go
//go:embed internal/agent/*.go internal/openai/*.go internal/resolve/*.go
//go:embed internal/resources/*.go internal/server/*.go internal/jsonl/*.go internal/extsort/*.go internal/cpuprofile/*.go
//go:embed internal/config/*.go internal/config/interp/*.go internal/config/override/*.go
//go:embed internal/config/pyyaml/*.go internal/config/tree/*.go
var GoSource embed.FS
