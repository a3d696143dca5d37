package launcher

import (
	"context"
	"fmt"

	"github.com/nemo-gym-go/gym/internal/python"
)

// Prefetch builds every Python server's venv exactly as a start would, one
// at a time (serial installs keep uv's cache small), without starting
// anything: no server, no head server, no Ray. Go and executable servers
// need no setup. A venv that cannot be made fails the prefetch with the
// installer's own error.
func Prefetch(ctx context.Context, opts Options) error {
	res := opts.Result
	specs, err := planAndSay(opts)
	if err != nil {
		return err
	}
	out := &syncWriter{w: opts.Out}
	var pySpecs []ChildSpec
	for _, spec := range specs {
		if spec.kind != runPython {
			instanceEmitter(spec.Instance, opts.Color, out)(fmt.Sprintf("%s runs as %s; nothing to prefetch", spec.Kind(), spec.kind))
			continue
		}
		pySpecs = append(pySpecs, spec)
	}
	if len(pySpecs) == 0 {
		return nil
	}
	settings, err := python.FromConfig(res.Value, opts.Cwd, opts.Environ, opts.LookPath)
	if err != nil {
		return err
	}
	if _, err := settings.UV(); err != nil {
		return err
	}
	venvs, err := buildVenvs(ctx, &settings, pySpecs, opts.Color, out)
	if err != nil {
		return err
	}
	for _, spec := range pySpecs {
		instanceEmitter(spec.Instance, opts.Color, out)("ready: " + venvs[spec.Dir].Python())
	}
	return nil
}
