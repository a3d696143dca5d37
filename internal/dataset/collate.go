package dataset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/pyjson"
	"github.com/nemo-gym-go/gym/internal/rollout"
)

// Modes of collation, as NeMo Gym names them.
const (
	ModeTrain   = "train_preparation"
	ModeExample = "example_validation"
)

// maxListedProblems bounds how many invalid rows of one file are listed.
const maxListedProblems = 5

// CollateOptions are the inputs of Collate: NeMo Gym's
// TrainDataProcessorConfig and where paths resolve.
type CollateOptions struct {
	Config *tree.Node // the resolved config
	// ConfigPaths are the config_paths entries, as given, for the hint
	// naming the config that declares a dataset to prepare.
	ConfigPaths        []string
	Mode               string
	OutputDir          string
	ShouldDownload     bool
	DataSource         string // huggingface (default) or gitlab: the backend when a dataset names both
	OverwriteConflicts bool
	TaskDataValidation string // off, warn, error or auto (the default)
	// Resolve is NeMo Gym's _resolve_under_cwd_or_install: where a read
	// path exists over the search roots, "" when nowhere.
	Resolve func(path string) string
	// Abs anchors a write path at the working directory.
	Abs       func(path string) string
	Out, Warn io.Writer
}

// inScope is the dataset types a mode collates, in NeMo Gym's order.
func inScope(mode string) []string {
	if mode == ModeExample {
		return []string{"example"}
	}
	return []string{"train", "validation", "benchmark"}
}

// CollateError is a failure of collation that names what to fix.
type CollateError struct{ Msg string }

func (e *CollateError) Error() string { return e.Msg }

// Collate is NeMo Gym's `gym dataset collate` (TrainDataProcessor.run):
// the in-scope datasets of the config's agents and resources servers are
// found (or the command to fetch each is named), every row is read and
// checked, each dataset's metrics are written beside it
// (<stem>_metrics.json), and each type's rows, stamped with the declaring
// instance (task_source), are written to <stem>_prepare.jsonl and
// collated into OutputDir/<type>.jsonl with OutputDir/<type>_metrics.json.
// Metrics files already there must agree with the new metrics, else a
// <stem>_conflict.json is written beside them and collation fails (unless
// OverwriteConflicts).
func Collate(ctx context.Context, o CollateOptions) error {
	if o.Mode != ModeTrain && o.Mode != ModeExample {
		return &CollateError{fmt.Sprintf("mode is %q; it must be %s or %s", o.Mode, ModeTrain, ModeExample)}
	}
	insts := instances(o.Config)
	all, err := declarations(insts)
	if err != nil {
		return err
	}
	types := inScope(o.Mode)
	var datasets []Dataset
	for _, d := range all {
		if slices.Contains(types, d.Type) {
			datasets = append(datasets, d)
		}
	}
	fmt.Fprintf(o.Out, "In scope dataset types for `%s` mode: %s\n", o.Mode, pyStrList(types))
	if len(datasets) == 0 {
		fmt.Fprintln(o.Out, "Found 0 server instance configs with in-scope datasets.")
	} else {
		fmt.Fprintln(o.Out, "Server instance configs with in-scope datasets:")
		printDatasets(o.Out, datasets)
	}
	for i := range datasets {
		if datasets[i].Taskset != "" {
			if err := checkTasksetRoute(o.Config, &datasets[i]); err != nil {
				return err
			}
		}
	}
	sources := map[*Dataset]string{}
	if err := o.locate(datasets, sources); err != nil {
		return err
	}
	for i := range datasets {
		if err := o.checkPythonHooks(&datasets[i]); err != nil {
			return err
		}
	}

	prompts := map[*Dataset]*rollout.Prompt{}
	for i := range datasets {
		d := &datasets[i]
		if !d.Benchmark || d.PromptConfig == "" {
			continue
		}
		p := o.Resolve(d.PromptConfig)
		if p == "" {
			return &CollateError{fmt.Sprintf("%s: prompt_config %s of dataset %q not found in any search root", d.where, d.PromptConfig, d.Name)}
		}
		var err error
		if prompts[d], err = rollout.LoadPrompt(p); err != nil {
			return err
		}
	}

	// Every row is read, and prepared as collation will prepare it, before
	// anything is written: a file with a broken line fails the run with no
	// half-written outputs.
	perType := map[string]*datasetMetrics{}
	type sidecar struct {
		path string
		dump pyjson.Object
	}
	var sidecars []sidecar
	// A task's index without an ID of its own is its source row's place
	// among every dataset of its type.
	taskBase, rowsOfType := map[*Dataset]int{}, map[string]int{}
	for i := range datasets {
		d := &datasets[i]
		taskBase[d] = rowsOfType[d.Type]
		m, rows, err := o.measure(ctx, d, sources[d], prompts[d], taskBase[d])
		if err != nil {
			return err
		}
		rowsOfType[d.Type] += rows
		if perType[d.Type] == nil {
			perType[d.Type] = newDatasetMetrics()
		}
		perType[d.Type].merge(m)
		dump := d.configDump(true)
		for _, mem := range m.dump() {
			dump = dump.Set(mem.Key, mem.Value)
		}
		sidecars = append(sidecars, sidecar{path: withSuffix(d.JSONLPath, "_metrics.json"), dump: dump})
	}
	var conflicts []string
	for _, s := range sidecars {
		conflict, existed, err := o.checkMetrics(s.path, s.dump)
		if err != nil {
			return err
		}
		if conflict != "" {
			conflicts = append(conflicts, conflict)
			if !o.OverwriteConflicts {
				continue
			}
		} else if existed {
			fmt.Fprintf(o.Out, "Aggregate metrics for %s already up to date\n", s.path)
			continue
		}
		if err := writeMetrics(o.Abs(s.path), s.dump); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "Aggregate metrics for %s\n", s.path)
	}
	if err := o.conflictsError(conflicts); err != nil {
		return err
	}

	var final []string
	conflicts = nil
	for _, t := range types {
		agg := perType[t]
		if agg == nil {
			continue
		}
		var first *Dataset
		for i := range datasets {
			if datasets[i].Type == t {
				first = &datasets[i]
				break
			}
		}
		dump := first.configDump(false)
		for _, mem := range agg.dump() {
			dump = dump.Set(mem.Key, mem.Value)
		}
		metricsPath := filepath.Join(o.OutputDir, t+"_metrics.json")
		if err := os.MkdirAll(o.Abs(o.OutputDir), 0o777); err != nil {
			return err
		}
		conflict, _, err := o.checkMetrics(metricsPath, dump)
		if err != nil {
			return err
		}
		if conflict != "" {
			conflicts = append(conflicts, conflict)
			if !o.OverwriteConflicts {
				continue
			}
		}
		if err := writeMetrics(o.Abs(metricsPath), dump); err != nil {
			return err
		}
		collated := filepath.Join(o.OutputDir, t+".jsonl")
		if err := o.collateType(ctx, t, datasets, sources, prompts, taskBase, o.Abs(collated)); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "Aggregate metrics for %s\n", metricsPath)
		final = append(final, fmt.Sprintf("%s: %s", t, collated))
	}
	if err := o.conflictsError(conflicts); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "View your final data!")
	for _, f := range final {
		fmt.Fprintln(o.Out, "- "+f)
	}
	return nil
}

func printDatasets(w io.Writer, datasets []Dataset) {
	var last *instance
	for _, d := range datasets {
		if d.Declarer != last {
			fmt.Fprintf(w, "- %s (%s)\n", d.Declarer.name, d.Declarer.serverType)
			last = d.Declarer
		}
		fmt.Fprintf(w, "  - %s (%s): %s\n", d.Name, d.Type, d.JSONLPath)
	}
}

// locate finds each dataset's file over the search roots. A missing one is
// an error that says how to get it: `gym eval prepare` for a prepared
// dataset, `gym dataset download` for one with a registry source.
func (o CollateOptions) locate(datasets []Dataset, sources map[*Dataset]string) error {
	var missing []*Dataset
	for i := range datasets {
		d := &datasets[i]
		if p := o.Resolve(d.JSONLPath); p != "" {
			sources[d] = p
		} else {
			missing = append(missing, d)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("MISSING the following datasets:")
	var last *instance
	for _, d := range missing {
		if d.Declarer != last {
			fmt.Fprintf(&b, "\n- %s", d.Declarer.name)
			last = d.Declarer
		}
		fmt.Fprintf(&b, "\n  - %s (%s): %s", d.Name, d.Type, d.JSONLPath)
	}
	switch {
	case o.Mode == ModeExample:
		b.WriteString("\nYou must provide the above missing example jsonl files!")
		return &CollateError{b.String()}
	case !o.ShouldDownload:
		b.WriteString("\nMissing local datasets. You must provide local datasets since download is disabled. Run with --download (+should_download=true) to see how to fetch them.")
		return &CollateError{b.String()}
	}
	b.WriteString("\ngym's collate does not download; fetch each one first, then collate again:")
	for _, d := range missing {
		fmt.Fprintf(&b, "\n- %s: %s", d.Name, o.fetchHint(d))
	}
	return &CollateError{b.String()}
}

// fetchHint is the command that produces a missing dataset's file.
func (o CollateOptions) fetchHint(d *Dataset) string {
	if d.PrepareScript != "" {
		return fmt.Sprintf("run `%s` (its prepare_script is %s)", o.prepareCommand(d), pyPath(d.PrepareScript))
	}
	backend := ""
	switch {
	case d.gitlab != nil && d.hf != nil:
		backend = o.DataSource
		if backend == "" {
			backend = "huggingface"
		}
	case d.gitlab != nil:
		backend = "gitlab"
	case d.hf != nil:
		backend = "huggingface"
	default:
		return "it names no source to download from (source, huggingface_identifier or gitlab_identifier); put the file at " + d.JSONLPath
	}
	str := func(o pyjson.Object, k string) string {
		v, _ := o.Get(k)
		s, _ := v.(string)
		return s
	}
	if backend == "gitlab" {
		return fmt.Sprintf("gym dataset download --storage gitlab --name %s --revision %s --artifact %s -o %s",
			shellQuote(str(d.gitlab, "dataset_name")), shellQuote(str(d.gitlab, "version")), shellQuote(str(d.gitlab, "artifact_fpath")), shellQuote(d.JSONLPath))
	}
	cmd := "gym dataset download --repo-id " + shellQuote(str(d.hf, "repo_id"))
	if a := str(d.hf, "artifact_fpath"); a != "" {
		cmd += " --artifact " + shellQuote(a)
	} else {
		cmd += " --split " + shellQuote(d.Type)
	}
	return cmd + " -o " + shellQuote(d.JSONLPath)
}

// prepareCommand names the config that declares d's prepare_script, as
// NeMo Gym's hint does.
func (o CollateOptions) prepareCommand(d *Dataset) string {
	for _, p := range o.ConfigPaths {
		path := o.Resolve(p)
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		root, err := pyyaml.Load(data, path)
		if err == nil && declaresPrepared(root, d) {
			return "gym eval prepare --config " + p
		}
	}
	return "gym eval prepare --config <config path>"
}

func declaresPrepared(n *tree.Node, d *Dataset) bool {
	if n == nil {
		return false
	}
	switch n.Kind {
	case tree.Map:
		if f := n.Get("jsonl_fpath"); f != nil && f.Kind == tree.String && f.Str == d.JSONLPath {
			if ps := n.Get("prepare_script"); ps != nil && ps.Kind != tree.Null {
				return true
			}
		}
		for _, e := range n.Entries {
			if declaresPrepared(e.Value, d) {
				return true
			}
		}
	case tree.List:
		for _, it := range n.Items {
			if declaresPrepared(it, d) {
				return true
			}
		}
	}
	return false
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:@%+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// measure reads one dataset (each line num_repeats times) and computes its
// metrics; it returns them and the number of source rows. Each row is also
// prepared as collation will prepare it, so what would fail there fails
// here, before anything is written. A row that is not a valid run request
// (or materialized task) is left out of the metrics, as NeMo Gym leaves it
// out, and reported; in a taskset's dataset it still counts as an example.
func (o CollateOptions) measure(ctx context.Context, d *Dataset, path string, prompt *rollout.Prompt, taskBase int) (*datasetMetrics, int, error) {
	lr, closer, err := openLines(path)
	if err != nil {
		return nil, 0, err
	}
	defer closer.Close()
	m := newDatasetMetrics()
	var problems []string
	invalid, rows := 0, 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		row, err := lr.loadRow(line)
		if err != nil {
			return nil, 0, err
		}
		if _, _, err := collateRow(lr, row, d, prompt, taskBase+rows); err != nil {
			return nil, 0, err
		}
		rows++
		obj := row.(pyjson.Object)
		problem := sampleProblem("")
		if isMaterializedTask(obj) {
			if ts, input, ok := materializedParts(obj); ok {
				b, err := pyjson.Dumps(input, false)
				if err != nil {
					return nil, 0, err
				}
				for range d.NumRepeats {
					m.addTask(ts, wordCount(b))
				}
				continue
			}
			problem = "a materialized task needs task_id {taskset, task_id} (non-empty strings, nothing else) and a task_input object"
		} else {
			var s sampleMetrics
			if s, problem = checkSample(row); problem == "" || d.Taskset != "" {
				if problem != "" {
					// The Environment Server owns a taskset's rows: an
					// example, with no response metrics.
					s = sampleMetrics{}
				}
				for range d.NumRepeats {
					m.addSample(s)
					if err := m.observeOthers(obj); err != nil {
						return nil, 0, lr.errorf("%v", err)
					}
				}
				continue
			}
		}
		invalid += d.NumRepeats
		if len(problems) < maxListedProblems {
			problems = append(problems, fmt.Sprintf("%s:%d: %s", path, lr.line, problem))
		}
	}
	m.finish()
	if invalid > 0 {
		fmt.Fprintf(o.Warn, "Warning: %d rows of dataset %q are not valid run requests and are left out of its metrics (as NeMo Gym leaves them out); they are still collated:\n", invalid, d.Name)
		for _, p := range problems {
			fmt.Fprintln(o.Warn, "  "+p)
		}
		if invalid > len(problems)*d.NumRepeats {
			fmt.Fprintln(o.Warn, "  …")
		}
	}
	return m, rows, nil
}

// collateRow is a row as collation writes it: an object, a benchmark's
// prompt applied, agent_ref dropped (stripped says it had one), task_source
// naming the declaring instance, and, for a taskset, materialized as a task
// (taskIndex its index when it has no ID) with the collector's identity
// kept beside it.
func collateRow(lr *lineReader, v any, d *Dataset, prompt *rollout.Prompt, taskIndex int) (row pyjson.Object, stripped bool, err error) {
	row, ok := v.(pyjson.Object)
	if !ok {
		return nil, false, lr.errorf("the row is %s, not a JSON object", describe(v))
	}
	// The caller still reads the row as it was (its metrics).
	row = append(pyjson.Object(nil), row...)
	if prompt != nil {
		has, err := hasInput(row)
		if err != nil {
			return nil, false, lr.errorf("%v", err)
		}
		if has {
			return nil, false, lr.errorf("Some rows have %s.input but prompt_config is also specified. These are mutually exclusive. Use one or the other. Violating rows: [0]", paramsKey)
		}
		if row, err = applyPrompt(row, prompt); err != nil {
			return nil, false, lr.errorf("%v", err)
		}
	}
	var ref any
	row, ref = row.Pop(agentRefKey)
	row = row.Set(taskSourceKey, d.Declarer.name)
	if d.Taskset == "" {
		return row, ref != nil, nil
	}
	var identity pyjson.Object
	for _, k := range identityKeys {
		if v, ok := row.Get(k); ok {
			identity = append(identity, pyjson.Member{Key: k, Value: v})
		}
	}
	task, err := materializeTask(row, d.Taskset, taskIndex)
	if err != nil {
		return nil, false, lr.errorf("taskset %s: %v", d.Taskset, err)
	}
	for _, m := range identity {
		task = task.Set(m.Key, m.Value)
	}
	return task, ref != nil, nil
}

// isMaterializedTask is NeMo Gym's is_materialized_task_row.
func isMaterializedTask(row pyjson.Object) bool {
	id, _ := row.Get("task_id")
	_, isObj := id.(pyjson.Object)
	_, hasInput := row.Get("task_input")
	return isObj && hasInput
}

// checkMetrics compares metrics with the file already at path (relative
// to the working directory). On a difference it writes
// <stem>_conflict.json beside it and returns that path.
func (o CollateOptions) checkMetrics(path string, dump pyjson.Object) (conflict string, existed bool, err error) {
	data, err := os.ReadFile(o.Abs(path))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	prev, err := pyjson.Loads(data)
	if err != nil {
		return "", true, &rollout.InputError{Path: path, Msg: fmt.Sprintf("the metrics file there is not JSON (%v); delete it and collate again", err)}
	}
	b, err := pyjson.Dumps(dump, false)
	if err != nil {
		return "", true, err
	}
	next, err := pyjson.Loads(b)
	if err != nil {
		return "", true, err
	}
	diffs := metricsDiffs(prev, next)
	if len(diffs) == 0 {
		return "", true, nil
	}
	fmt.Fprintln(o.Out, "Differences found in aggregate metrics:")
	for _, d := range diffs {
		fmt.Fprintln(o.Out, "  "+d)
	}
	conflict = withSuffix(path, "_conflict.json")
	return conflict, true, writeMetrics(o.Abs(conflict), dump)
}

func (o CollateOptions) conflictsError(conflicts []string) error {
	if len(conflicts) == 0 {
		return nil
	}
	targets := make([]string, len(conflicts))
	for i, c := range conflicts {
		targets[i] = strings.Replace(c, "_conflict.json", ".json", 1)
	}
	msg := fmt.Sprintf("Found conflicting aggregate metrics that need to be corrected:\n- %s\n\nThis could be due to a change in how metrics are calculated, leading to outdated metrics. Try deleting the below file(s) and rerunning data preparation:\n- %s",
		strings.Join(conflicts, "\n- "), strings.Join(targets, "\n- "))
	if o.OverwriteConflicts {
		fmt.Fprintln(o.Out, msg)
		return nil
	}
	return &CollateError{msg}
}

// writeMetrics writes a metrics file as json.dump(..., indent=4) does (no
// final newline), making its directory.
func writeMetrics(path string, dump pyjson.Object) error {
	b, err := pyjson.DumpsIndent(dump, 4)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o666)
}

// withSuffix is Path(p).with_name(f"{Path(p).stem}{suffix}").
func withSuffix(p, suffix string) string {
	p = pyPath(p)
	dir, name := filepath.Split(p)
	return dir + pyStem(name) + suffix
}

// pyStem is PurePath.stem: the name without its last suffix, a suffix
// being a final dot and what follows when that is neither the whole name
// nor nothing.
func pyStem(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i > 0 && i < len(name)-1 {
		return name[:i]
	}
	return name
}

// collateType writes each dataset of type t to its <stem>_prepare.jsonl
// (stamped with task_source, agent_ref dropped, a benchmark's prompt
// applied) and concatenates them into collated.
func (o CollateOptions) collateType(ctx context.Context, t string, datasets []Dataset, sources map[*Dataset]string, prompts map[*Dataset]*rollout.Prompt, taskBase map[*Dataset]int, collated string) error {
	used := map[string]bool{}
	var prepared []string
	for i := range datasets {
		d := &datasets[i]
		if d.Type != t {
			continue
		}
		path := preparePath(d, used)
		used[path] = true
		if err := o.prepare(ctx, d, sources[d], prompts[d], taskBase[d], o.Abs(path)); err != nil {
			return err
		}
		prepared = append(prepared, o.Abs(path))
	}
	out, err := os.Create(collated)
	if err != nil {
		return err
	}
	for _, p := range prepared {
		in, err := os.Open(p)
		if err != nil {
			out.Close()
			return err
		}
		_, err = io.Copy(out, in)
		in.Close()
		if err != nil {
			out.Close()
			return err
		}
	}
	return out.Close()
}

// preparePath is the first unused of NeMo Gym's candidates for a
// declaration's prepared file: <stem>_prepare.jsonl, then qualified by the
// instance, then by the dataset, then numbered.
func preparePath(d *Dataset, used map[string]bool) string {
	inst := d.Declarer.name
	for _, c := range []string{"_prepare.jsonl", "_prepare." + inst + ".jsonl", "_prepare." + inst + "." + d.Name + ".jsonl"} {
		if p := withSuffix(d.JSONLPath, c); !used[p] {
			return p
		}
	}
	for k := 2; ; k++ {
		if p := withSuffix(d.JSONLPath, fmt.Sprintf("_prepare.%s.%s.%d.jsonl", inst, d.Name, k)); !used[p] {
			return p
		}
	}
}

func (o CollateOptions) prepare(ctx context.Context, d *Dataset, source string, prompt *rollout.Prompt, taskBase int, path string) error {
	lr, closer, err := openLines(source)
	if err != nil {
		return err
	}
	defer closer.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	stripped := 0
	var buf []byte
	err = func() error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			line, err := lr.next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			v, err := lr.loadRow(line)
			if err != nil {
				return err
			}
			row, hadRef, err := collateRow(lr, v, d, prompt, taskBase+lr.line-1)
			if err != nil {
				return err
			}
			if hadRef {
				stripped += d.NumRepeats
			}
			if buf, err = pyjson.AppendDumps(buf[:0], row, false); err != nil {
				return err
			}
			buf = append(buf, '\n')
			for range d.NumRepeats {
				w.Write(buf)
			}
		}
	}()
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && stripped > 0 {
		fmt.Fprintf(o.Warn, "Warning: %s: stripped legacy agent_ref from %d rows (deprecated in source datasets; routing comes from the config declaration).\n", d.JSONLPath, stripped)
	}
	return err
}

// checkPythonHooks says what gym cannot run of the Python the server that
// owns a dataset's rows may ship: its task_data.py schema, with which NeMo
// Gym validates the rows (Pydantic), and its dataset_metrics.py hook, which
// adds task metrics of materialized tasks. Each is a warning, unless
// validation was asked for outright (task_data_validation=error), when the
// schema is an error.
func (o CollateOptions) checkPythonHooks(d *Dataset) error {
	rel := o.ownerDir(d)
	if rel == "" {
		return nil
	}
	dir := o.Resolve(rel)
	if dir == "" {
		return nil
	}
	if p := filepath.Join(dir, "task_data.py"); o.TaskDataValidation != "off" && fileExists(p) {
		if o.TaskDataValidation == "error" {
			return &CollateError{fmt.Sprintf("task_data_validation=error: the rows of dataset %q would be checked against %s, a Python (Pydantic) schema gym's collate cannot run; run NeMo Gym's `gym dataset collate` for that check, or set task_data_validation to warn or off", d.Name, p)}
		}
		fmt.Fprintf(o.Warn, "Warning: the rows of dataset %q are not checked against %s: that schema is Python (Pydantic), which gym's collate does not run; run NeMo Gym's `gym dataset collate` to check them\n", d.Name, p)
	}
	if p := filepath.Join(dir, "dataset_metrics.py"); fileExists(p) {
		fmt.Fprintf(o.Warn, "Warning: the task metrics of %s (compute_task_metrics) are not in the metrics of dataset %q: that hook is Python, which gym's collate does not run\n", p, d.Name)
	}
	return nil
}

// ownerDir is the component directory whose schema owns a dataset's rows,
// as NeMo Gym finds it: the declaring resources server, the resources
// server a declaring agent references, or a self-contained agent itself.
func (o CollateOptions) ownerDir(d *Dataset) string {
	in := d.Declarer
	switch in.serverType {
	case resourcesType:
		return filepath.Join(resourcesType, in.impl)
	case agentsType:
		ref := in.inner.Get("resources_server")
		if ref == nil || ref.Kind == tree.Null {
			return filepath.Join(agentsType, in.impl)
		}
		name := ref.Get("name")
		if ref.Kind != tree.Map || name == nil || name.Kind != tree.String {
			return ""
		}
		for _, other := range instances(o.Config) {
			if other.serverType == resourcesType && other.name == name.Str {
				return filepath.Join(resourcesType, other.impl)
			}
		}
	}
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
