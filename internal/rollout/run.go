// Package rollout is gym's evaluation engine, NeMo Gym's rollout
// collection: it materializes input rows into rollouts, runs each through
// its agent's /run with bounded concurrency, appends every result durably
// as it completes, resumes a run exactly where it stopped, and computes
// the aggregate metrics.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// Paths are the files of one run, named after the output file as NeMo Gym
// names them.
type Paths struct {
	Output       string // results/x.jsonl
	Materialized string // results/x_materialized_inputs.jsonl
	Failures     string // results/x_failures.jsonl
	Metrics      string // results/x_aggregate_metrics.json
}

// Stem is the output path without its extension, by pathlib's rule for
// Path.stem: a leading or trailing dot does not start an extension.
func Stem(output string) string {
	name := filepath.Base(output)
	if i := strings.LastIndexByte(name, '.'); i > 0 && i < len(name)-1 {
		return output[:len(output)-len(name)+i]
	}
	return output
}

// PathsFor derives a run's files from its output path.
func PathsFor(output string) Paths {
	stem := Stem(output)
	return Paths{
		Output:       output,
		Materialized: stem + "_materialized_inputs.jsonl",
		Failures:     stem + "_failures.jsonl",
		Metrics:      stem + "_aggregate_metrics.json",
	}
}

// sideFileSuffixes end the JSONL files a run and its profile write beside
// the rollouts.
var sideFileSuffixes = []string{"_materialized_inputs.jsonl", "_failures.jsonl", "_reward_profiling.jsonl"}

// IsSideFile reports whether path is one of the files gym writes beside a
// run's rollouts, which are never rollouts themselves.
func IsSideFile(path string) bool {
	for _, suffix := range sideFileSuffixes {
		if strings.HasSuffix(filepath.Base(path), suffix) {
			return true
		}
	}
	return false
}

// RunOptions are the inputs of one `gym eval run` collection.
type RunOptions struct {
	Paths Paths
	// Materialize says how to build the rollouts; its OutputPath is set
	// from Paths.
	Materialize MaterializeOptions
	// Collect says how to run them.
	Collect CollectOptions
	// Resume asks to continue an earlier run of the same output.
	Resume bool
	// Aggregator computes the metrics; nil disables aggregation.
	Aggregator Aggregator
	// Out receives the results summary, Log the notices.
	Out, Log io.Writer
}

// RunResult is what a collection produced.
type RunResult struct {
	Summary      *Summary
	Materialized MaterializeStats
	Metrics      []AgentMetrics
	// MetricsWritten is false when aggregation was off or nothing succeeded.
	MetricsWritten bool
}

// Run materializes (unless resuming), collects and aggregates. A run that
// is cancelled returns the context's cause after writing everything that
// finished; --resume then runs the rest.
func Run(ctx context.Context, o RunOptions) (*RunResult, error) {
	p := o.Paths
	if err := os.MkdirAll(filepath.Dir(p.Output), 0o755); err != nil {
		return nil, err
	}
	// What a run killed mid-write left beside these outputs goes first.
	for _, path := range []string{p.Output, p.Materialized, p.Materialized + ".next", p.Failures, p.Metrics} {
		jsonl.RemoveStaleTemps(path)
	}
	res := &RunResult{}
	resume := o.Resume
	if resume {
		for _, f := range []struct{ path, what string }{{p.Materialized, "materialized inputs"}, {p.Output, "rollouts"}} {
			if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(o.Log, "Cannot resume: the %s file %s does not exist; starting from the beginning.\n", f.what, f.path)
				resume = false
				break
			}
		}
	} else {
		fmt.Fprintln(o.Log, "Clearing output fpath since `resume_from_cache=False`!")
	}

	st, sum := newResumeState(), &Summary{}
	if !resume {
		// The new rollouts are materialized and their agents found before
		// the old results go, so bad input never costs the last run's
		// results; and in this order a run killed part-way never leaves an
		// old materialized file beside new results for --resume to trust.
		next := p.Materialized + ".next"
		mo := o.Materialize
		mo.OutputPath = next
		stats, err := Materialize(ctx, mo)
		res.Materialized = stats
		if err == nil {
			sum.Rollouts = stats.Rollouts
			err = checkAgents(ctx, next, stats.Agents, o.Collect.AgentURL)
		}
		if err != nil {
			os.Remove(next)
			return res, err
		}
		if err := os.Remove(p.Materialized); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, f := range []string{p.Output, p.Failures} {
			if err := truncateFile(f); err != nil {
				return nil, err
			}
		}
		if err := os.Rename(next, p.Materialized); err != nil {
			return nil, err
		}
		of := ""
		if sh := o.Materialize.Shard; sh.Count > 0 {
			of = fmt.Sprintf(" (shard %s: the tasks whose index %% %d is %d)", sh, sh.Count, sh.Index)
		}
		fmt.Fprintf(o.Log, "Materialized %d rollouts of %d tasks%s from %d rows into %s\n", stats.Rollouts, stats.Tasks, of, stats.Rows, p.Materialized)
	}

	if resume {
		if sh := o.Materialize.Shard; sh.Count > 1 {
			if err := checkShard(p.Materialized, sh); err != nil {
				return res, err
			}
		}
		// The agents are found before the resume reads the results, which
		// cuts a torn last line off them: a refused resume leaves them be.
		if err := findAgents(ctx, p.Materialized, o.Collect.AgentURL); err != nil {
			return res, err
		}
		var err error
		if st, err = readResume(p.Output, p.Failures); err != nil {
			return res, err
		}
		if sum, err = countRollouts(p.Materialized, st, o.Collect.MaxAttempts); err != nil {
			return res, err
		}
		if o.Collect.Log != nil {
			st.logResume(o.Collect.Log, sum.Rollouts, "materialized", sum.Standings, o.Collect.MaxAttempts)
		}
	}
	sum, collectErr := collect(ctx, p, st, sum, o.Collect)
	res.Summary = sum
	var failures *RequestFailuresError
	if collectErr != nil && !errors.As(collectErr, &failures) {
		return res, collectErr
	}

	if o.Aggregator == nil {
		fmt.Fprintln(o.Log, "Aggregation is disabled; compute the metrics later with `gym eval aggregate`.")
	} else {
		rows, err := ReadMetricsRows(filepath.Dir(p.Metrics), p.Output)
		if err != nil {
			return res, err
		}
		defer rows.Close()
		if rows.Rows() > 0 {
			if res.Metrics, err = WriteAggregateMetrics(ctx, rows, o.Aggregator, p.Metrics, o.Out); err != nil {
				return res, err
			}
			res.MetricsWritten = true
		}
	}
	metrics := "None"
	if res.MetricsWritten {
		metrics = p.Metrics
	}
	fmt.Fprintf(o.Out, "Finished rollout collection! View results at:\nFully materialized inputs: %s\nRollouts: %s\nAggregate metrics: %s\n", p.Materialized, p.Output, metrics)
	return res, collectErr
}
