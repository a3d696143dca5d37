// Package gym holds the built-in component tree (configs, data, READMEs) so
// that a `go install`ed binary with no source checkout can find it: the
// tree is embedded here and materialised into a cache directory on use.
package gym

import "embed"

// Builtin is the install root's content, laid out as NeMo Gym lays out its
// repository: the components, the benchmarks whose data ships with gym, and
// the manifest-backed environments built on them.
//
//go:embed all:environments all:environment_servers all:responses_api_models all:responses_api_agents all:resources_servers all:benchmarks
var Builtin embed.FS
