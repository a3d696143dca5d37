package oracle

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// sweepEnv turns on TestNeMoGymResolveSweep.
const sweepEnv = "GYM_ORACLE_SWEEP"

// TestNeMoGymResolveSweep resolves every config of the wheel's component
// trees (a resources server, agent, benchmark or environment config with
// openai_model; a model config alone) with both resolvers and prints the
// differences grouped by kind and path shape, with one example each
// (GYM_ORACLE_SWEEP_OUT=FILE also writes every case's differences there).
// It hunts for new differences and never fails on one; it runs only with
// GYM_ORACLE_SWEEP=1 (a few minutes).
func TestNeMoGymResolveSweep(t *testing.T) {
	if os.Getenv(sweepEnv) == "" {
		t.Skip(sweepEnv + " is not set; the sweep over every NeMo Gym config runs only on request")
	}
	e := setup(t)
	cases, err := sweepCases(e.work)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	runs := e.resolveAll(t, cases, 30*time.Minute)
	t.Logf("resolved %d configs with both resolvers in %v", len(runs), time.Since(start).Round(time.Millisecond))

	type group struct {
		cases   []string
		example string
	}
	groups := map[string]*group{}
	add := func(key, name, example string) {
		g := groups[key]
		if g == nil {
			g = &group{example: name + ": " + example}
			groups[key] = g
		}
		g.cases = append(g.cases, name)
	}
	var all strings.Builder // every case's differences, for GYM_ORACLE_SWEEP_OUT
	var both, agree int
	for _, r := range runs {
		res := r.compare()
		fmt.Fprintf(&all, "== %s (NeMo Gym exit %d, gym exit %d)\n", r.c.name, r.nemo.code, r.ours.code)
		for _, d := range res.diffs {
			fmt.Fprintf(&all, "  %s\n", strings.ReplaceAll(d.String(), "\n", "\n  "))
		}
		switch {
		case res.err != nil:
			add("unreadable output", r.c.name, res.err.Error())
		case res.bothFailed:
			both++
			add("both fail: NeMo Gym: "+gist(r.nemo.message())+" | gym: "+gist(r.ours.message()), r.c.name,
				"\nNeMo Gym: "+r.nemo.message()+"\ngym: "+r.ours.message())
		case len(res.diffs) == 0:
			agree++
		}
		for _, d := range res.diffs {
			key := string(d.Kind) + " " + shape(d.Path)
			if id := explainedBy(nil, d); id != "" {
				key = "[" + id + "] " + key
			}
			switch d.Kind {
			case OursFails:
				key += ": " + firstLine(r.ours.message())
			case NeMoFails:
				key += ": " + firstLine(r.nemo.message())
			}
			add(key, r.c.name, d.String())
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(groups[keys[i]].cases) > len(groups[keys[j]].cases) })
	var b strings.Builder
	fmt.Fprintf(&b, "%d configs: %d identical, %d rejected by both, the rest differ\n", len(runs), agree, both)
	for _, k := range keys {
		g := groups[k]
		fmt.Fprintf(&b, "\n%d× %s\n    e.g. %s\n", len(g.cases), k, strings.ReplaceAll(g.example, "\n", "\n    "))
		if len(g.cases) <= 12 {
			fmt.Fprintf(&b, "    in: %s\n", strings.Join(g.cases, ", "))
		}
	}
	t.Log(b.String())
	if out := os.Getenv(sweepEnv + "_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(all.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// shape generalizes a path for grouping: the top-level id and the
// implementation become *, list indices [*].
func shape(p Path) string {
	q := make(Path, len(p))
	copy(q, p)
	for i, s := range q {
		switch {
		case isIndex(s):
			q[i] = "[*]"
		case (i == 0 || i == 2) && len(q) > 3:
			q[i] = "*"
		}
	}
	return q.String()
}

// sweepCases lists every config of the component tree under work.
func sweepCases(work string) ([]oracleCase, error) {
	var cases []oracleCase
	err := filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(work, p)
		parts := strings.Split(rel, string(filepath.Separator))
		switch {
		case parts[0] == "responses_api_models" && len(parts) == 4 && parts[2] == "configs":
			cases = append(cases, oracleCase{name: rel, args: configs(rel)})
		case (parts[0] == "resources_servers" || parts[0] == "responses_api_agents") && len(parts) == 4 && parts[2] == "configs",
			(parts[0] == "benchmarks" || parts[0] == "environments") && len(parts) == 3 && parts[2] != "manifest.yaml":
			cases = append(cases, oracleCase{name: rel, args: configs(rel, openaiModel)})
		}
		return nil
	})
	return cases, err
}

// gist is the kind of an error message: its first line, cut before the
// first quote or colon after "Error: ", so messages about different keys
// group together.
func gist(msg string) string {
	line := strings.TrimPrefix(firstLine(msg), "Error: ")
	if i := strings.IndexAny(line, "'\"`:("); i > 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}
