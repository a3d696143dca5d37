package launcher

import (
	"context"
	"fmt"
)

// Prefetch sets up every Python server's environment, one at a time (serial
// installs keep uv's cache small), without starting anything. Go and
// executable servers need no setup.
func Prefetch(ctx context.Context, opts Options) error {
	res := opts.Result
	specs, err := plan(res, opts.Roots, res.LookupEnv, opts.Registered, opts.RegisteredKinds)
	if err != nil {
		return err
	}
	out := &syncWriter{w: opts.Out}
	py := newPythonEnv(res.Config, opts.LookPath, opts.Environ)
	done := map[string]bool{}
	for _, spec := range specs {
		c := &child{spec: spec, tail: &tail{max: 40}}
		emit := func(line string) { c.emit(line, opts.Color, out) }
		switch {
		case spec.kind != runPython:
			emit(fmt.Sprintf("%s runs as %s; nothing to prefetch", spec.Kind(), spec.kind))
		case done[spec.Dir]:
			emit("environment already set up for " + spec.Dir)
		default:
			python, err := py.interpreter(ctx, spec, emit)
			if err != nil {
				return err
			}
			done[spec.Dir] = true
			emit("ready: " + python)
		}
	}
	return nil
}
