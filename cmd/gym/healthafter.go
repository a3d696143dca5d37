package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/health"
	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// NeMo Gym's keys for the rollout health check that follows `eval run`
// and `eval aggregate`.
const (
	keyDisableHealthCheck = "disable_health_check"
	keyHealthWorkers      = "health_check_workers"
	keyHealthIgnored      = "health_check_ignored_checks"
)

// healthFlags are the health-check flags of eval run and eval aggregate.
type healthFlags struct {
	disabled bool
	workers  int
	ignore   string
}

func (h *healthFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&h.disabled, "no-health-check", false, "skip the rollout health check after the metrics (disable_health_check)")
	fs.IntVar(&h.workers, "health-check-workers", 0, "parallel workers of the health check (health_check_workers)")
	fs.StringVar(&h.ignore, "health-check-ignore", "", "comma-separated check IDs to leave out of the health verdicts (health_check_ignored_checks)")
}

// tokens are the flags given, as NeMo Gym's overrides.
func (h *healthFlags) tokens(fs *pflag.FlagSet) []string {
	var t []string
	if fs.Changed("no-health-check") && h.disabled {
		t = append(t, "++"+keyDisableHealthCheck+"=true")
	}
	if fs.Changed("health-check-workers") {
		t = append(t, "++"+keyHealthWorkers+"="+strconv.Itoa(h.workers))
	}
	if fs.Changed("health-check-ignore") {
		var ids []string
		for _, id := range strings.Split(h.ignore, ",") {
			ids = append(ids, string(pyjson.AppendString(nil, strings.TrimSpace(id))))
		}
		t = append(t, "++"+keyHealthIgnored+"=["+strings.Join(ids, ",")+"]")
	}
	return t
}

// healthCheck is the post-run health check as the config sets it.
type healthCheck struct {
	disabled bool
	workers  int // 0: the default
	ignored  []string
}

// readHealthCheck reads and checks the keys before anything runs, as NeMo
// Gym validates them with the rest of its collection config.
func readHealthCheck(s config.Settings) (healthCheck, error) {
	var h healthCheck
	var err error
	if h.disabled, err = s.Bool(keyDisableHealthCheck); err != nil {
		return h, err
	}
	n, err := s.Node(keyHealthWorkers)
	if err != nil {
		return h, err
	}
	if n != nil {
		if n.Kind != tree.Int || n.Int < 1 {
			return h, &config.BadSettingError{Key: keyHealthWorkers, Flag: "--health-check-workers", Value: n, Reason: errors.New("workers must be at least 1")}
		}
		h.workers = int(n.Int)
	}
	if n, err = s.Node(keyHealthIgnored); err != nil || n == nil {
		return h, err
	}
	var ids []string
	switch n.Kind {
	case tree.String:
		ids = strings.Split(n.Str, ",")
	case tree.List:
		for _, it := range n.Items {
			if it.Kind != tree.String {
				return h, &config.BadSettingError{Key: keyHealthIgnored, Flag: "--health-check-ignore", Value: n, Reason: errors.New("check IDs must be strings")}
			}
			ids = append(ids, it.Str)
		}
	default:
		return h, &config.BadSettingError{Key: keyHealthIgnored, Flag: "--health-check-ignore", Value: n, Reason: errors.New("expected a list of check IDs")}
	}
	if h.ignored, err = health.NormalizeIgnored(ids); err != nil {
		return h, &config.BadSettingError{Key: keyHealthIgnored, Flag: "--health-check-ignore", Value: n, Reason: err}
	}
	return h, nil
}

// run checks the rollouts and prints the verdict counts; a check that
// fails leaves the run's artifacts as they are and only says so.
func (h healthCheck) run(ctx context.Context, rollouts []string, outputDir string, out, errOut io.Writer) {
	if h.disabled {
		return
	}
	res, err := health.Run(ctx, health.Options{Rollouts: rollouts, OutputDir: outputDir, Workers: h.workers, Ignored: h.ignored})
	if err != nil {
		fmt.Fprintf(errOut, "Rollout health checks failed; the rollout artifacts are still available: %v\n", err)
		return
	}
	defer res.Close()
	fmt.Fprintln(out, health.Report(res))
}
