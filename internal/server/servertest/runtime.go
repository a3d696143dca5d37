package servertest

import (
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Runtime is the runtime `gym serve` builds for instance when the run's
// config is configYAML: what a component's factory receives.
func Runtime(configYAML, instance string) (*server.Runtime, error) {
	env := map[string]string{config.ConfigDictEnv: configYAML, config.ConfigPathEnv: instance}
	return server.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}
