package oracle

// The machinery of the oracle test: the temp dir bound into the NeMo Gym
// root, running commands there, pinning ports, and driving both resolvers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nemo-gym-go/gym/test/gymbin"
)

// env is the oracle's environment: the root, the temp dir bound into it,
// the binary and the paths both resolvers use.
type env struct {
	root       string // the NeMo Gym root, on the host
	inroot     string // test/nemogym/inroot.sh
	tmp        string // bound into the root at the same path
	work       string // the copied component tree: cwd of most cases
	project    string // cwd of the project cases: env.yaml
	gym        string // the static gym binary
	sitePkgs   string // NeMo Gym's install root, inside the root
	out        string // outputs
	commonEnvs []string
}

func setup(t *testing.T) *env {
	t.Helper()
	root := os.Getenv(rootEnv)
	if root == "" {
		t.Skip(rootEnv + " is not set; export the path test/nemogym/root.sh prints to compare against NeMo Gym")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root privileges (unshare and chroot into " + root + ")")
	}
	for _, tool := range []string{"unshare", "chroot", "mount", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s on PATH to enter the NeMo Gym root", tool)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "opt/nemo-gym/bin/python")); err != nil {
		t.Fatalf("%s=%s is not a NeMo Gym root (no /opt/nemo-gym/bin/python): %v", rootEnv, root, err)
	}
	matches, _ := filepath.Glob(filepath.Join(root, "opt/nemo-gym/lib/python3*/site-packages/nemo_gym"))
	if len(matches) != 1 {
		t.Fatalf("cannot find nemo_gym's site-packages in %s: %v", root, matches)
	}
	hostSitePkgs := filepath.Dir(matches[0])
	inroot, err := filepath.Abs("../nemogym/inroot.sh")
	if err != nil {
		t.Fatal(err)
	}

	// A short temp dir: it is recreated (empty) inside the root as the mount
	// point, so remove that again afterwards.
	tmp, err := os.MkdirTemp("", "gym-oracle-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(tmp)
		os.Remove(filepath.Join(root, tmp)) // the empty mount point; only if empty
	})
	e := &env{
		root: root, inroot: inroot, tmp: tmp,
		work:     filepath.Join(tmp, "work"),
		project:  filepath.Join(tmp, "project"),
		gym:      filepath.Join(tmp, "bin/gym"),
		sitePkgs: strings.TrimPrefix(hostSitePkgs, filepath.Clean(root)),
		out:      filepath.Join(tmp, "out"),
	}
	e.commonEnvs = []string{
		// Home and temp files in the temp dir, not in the root (NeMo Gym's
		// exporters make temp dirs its forked children cannot clean up).
		"HOME=" + filepath.Join(tmp, "home"),
		"TMPDIR=" + filepath.Join(tmp, "tmp"),
		"GYM_INSTALL_ROOT=" + e.sitePkgs, // gym's fallback root = NeMo Gym's install root
		"NO_COLOR=1",
	}
	for _, d := range []string{e.work, e.project, e.out, filepath.Dir(e.gym), filepath.Join(tmp, "home"), filepath.Join(tmp, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyComponentYAML(hostSitePkgs, e.work); err != nil {
		t.Fatalf("copying NeMo Gym's component configs: %v", err)
	}
	if err := os.WriteFile(filepath.Join(e.project, "env.yaml"), []byte(projectEnvYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	buildGym(t, e.gym)
	return e
}

// copyComponentYAML copies every YAML file of the wheel's component trees.
func copyComponentYAML(from, to string) error {
	for _, top := range []string{"resources_servers", "responses_api_agents", "responses_api_models", "benchmarks", "environments"} {
		err := filepath.WalkDir(filepath.Join(from, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				return err
			}
			rel, _ := filepath.Rel(from, p)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			dst := filepath.Join(to, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, data, 0o644)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// buildGym puts gym at dst, which is named gym.
func buildGym(t *testing.T, dst string) {
	t.Helper()
	if prebuilt := os.Getenv(binEnv); prebuilt != "" {
		data, err := os.ReadFile(prebuilt)
		if err != nil {
			t.Fatalf("%s: %v", binEnv, err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := gymbin.Build(filepath.Dir(dst)); err != nil {
		t.Fatal(err)
	}
}

// run runs argv chrooted in the root, from dir, and returns its output and
// exit code.
func (e *env) run(ctx context.Context, dir string, extraEnv []string, argv ...string) (stdout, stderr string, code int, err error) {
	args := []string{e.root, "--bind", e.tmp}
	for _, kv := range append(append([]string{}, e.commonEnvs...), extraEnv...) {
		args = append(args, "--env", kv)
	}
	args = append(args, "--", "/bin/sh", "-c", `cd "$1" && shift && exec "$@"`, "sh", dir)
	args = append(args, argv...)
	cmd := exec.CommandContext(ctx, e.inroot, args...)
	// Its own process group, so a timeout ends the whole tree (the NeMo Gym
	// driver forks).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var o, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &errb
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && ctx.Err() == nil {
		return o.String(), errb.String(), exit.ExitCode(), nil
	}
	if err != nil {
		return o.String(), errb.String(), -1, fmt.Errorf("%v (stderr: %s)", err, errb.String())
	}
	return o.String(), errb.String(), 0, nil
}

// outcome is what one resolver printed for one case.
type outcome struct {
	stdout, stderr string
	code           int
}

// contains reports whether the output holds text, whitespace runs counting
// as one space (NeMo Gym's rich output wraps at 80 columns).
func (o outcome) contains(text string) bool {
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	return strings.Contains(flat(o.stdout+"\n"+o.stderr), flat(text))
}

// message is the output for a report, cut at 2000 characters.
func (o outcome) message() string {
	msg := strings.TrimSpace(o.stdout + "\n" + o.stderr)
	if len(msg) > 2000 {
		msg = msg[:2000] + "..."
	}
	return msg
}

func (e *env) caseDir(c oracleCase) string {
	if c.project {
		return e.project
	}
	return e.work
}

func (e *env) caseArgs(c oracleCase) []string {
	args := append([]string{}, c.args...)
	if c.project {
		args = append([]string{"--search-dir", e.work}, args...)
	}
	if !c.noPolicy {
		args = append(args, policyOverrides...)
	}
	return args
}

// portPins reads gym's --show-origin output and returns the overrides that
// pin, from first on, the port of every server-shaped block (a top-level
// <id>.<type>.<impl> map holding an entrypoint) whose port gym defaulted or
// did not set. Ports a config sets stay as they are.
func portPins(showOrigin string, first int) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(showOrigin), &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	var pins []string
	next := first
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		id, block := top.Content[i].Value, top.Content[i+1]
		if block.Kind != yaml.MappingNode || len(block.Content) < 2 {
			continue
		}
		typ, impls := block.Content[0].Value, block.Content[1]
		if impls.Kind != yaml.MappingNode || len(impls.Content) != 2 {
			continue
		}
		impl, inner := impls.Content[0].Value, impls.Content[1]
		if inner.Kind != yaml.MappingNode {
			continue
		}
		hasEntrypoint, pinnable := false, true
		for j := 0; j+1 < len(inner.Content); j += 2 {
			switch inner.Content[j].Value {
			case "entrypoint":
				hasEntrypoint = true
			case "port":
				pinnable = strings.TrimSpace(strings.TrimPrefix(inner.Content[j+1].LineComment, "#")) == "default"
			}
		}
		if !hasEntrypoint || !pinnable || !hydraKey.MatchString(id) || !hydraKey.MatchString(typ) {
			continue
		}
		if next == 11000 { // the default head port
			next++
		}
		switch {
		case hydraKey.MatchString(impl):
			pins = append(pins, fmt.Sprintf("++%s.%s.%s.port=%d", id, typ, impl, next))
		case hydraDictKey.MatchString(impl):
			// NeMo Gym has implementation names such as
			// conversational_tool_use/simulation, which a dotted override key
			// cannot address but a dict key can; the dict merges.
			pins = append(pins, fmt.Sprintf("++%s.%s={%s:{port:%d}}", id, typ, impl, next))
		default:
			continue
		}
		next++
	}
	return pins, nil
}

// hydraKey is one segment of a key in Hydra's override grammar;
// hydraDictKey a key inside a {...} value.
var (
	hydraKey     = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)
	hydraDictKey = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$/.-]*$`)
)

// caseRun is one case's inputs and both outcomes.
type caseRun struct {
	c          oracleCase
	dir        string
	args       []string // the final args, pins included
	pass1      outcome  // gym, unpinned, --show-origin
	nemo, ours outcome
	prefix     string // NeMo Gym's output files
}

// parallelGym is how many gym runs go at once.
const parallelGym = 4

// forEach runs fn on every run, n at a time.
func forEach(runs []*caseRun, n int, fn func(*caseRun)) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(r)
		}()
	}
	wg.Wait()
}

// runNeMoGym runs NeMo Gym's resolver on every case of one cwd, through
// testdata/nemo_gym_resolve.py.
// The driver's own stderr (warnings, not the cases') is returned.
func (e *env) runNeMoGym(ctx context.Context, dir string, group []*caseRun) (string, error) {
	type driverCase struct {
		Args []string `json:"args"`
		Out  string   `json:"out"`
	}
	spec := struct {
		Jobs       int          `json:"jobs"`
		SecretRule secretRule   `json:"secret_rule"`
		Cases      []driverCase `json:"cases"`
	}{Jobs: 2, SecretRule: gymSecretRule}
	for _, r := range group {
		spec.Cases = append(spec.Cases, driverCase{Args: r.args, Out: r.prefix})
	}
	name := filepath.Join(e.out, "driver-"+filepath.Base(dir))
	data, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(name+".json", data, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(name+".py", driverScript, 0o644); err != nil {
		return "", err
	}
	// The driver forks after importing nemo_gym; keep that import
	// single-threaded (numpy's OpenBLAS pool, pyarrow's jemalloc background
	// thread), so the children inherit no lock a thread held. Neither
	// variable is read by any config.
	threads := []string{"OPENBLAS_NUM_THREADS=1", "JE_ARROW_MALLOC_CONF=background_thread:false"}
	stdout, stderr, code, err := e.run(ctx, dir, threads, "/opt/nemo-gym/bin/python", name+".py", name+".json")
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("driver exited %d\n%s\n%s", code, stdout, stderr)
	}
	return stderr, nil
}

func readOutcome(prefix string) outcome {
	stdout, _ := os.ReadFile(prefix + ".stdout")
	stderr, _ := os.ReadFile(prefix + ".stderr")
	rc, err := os.ReadFile(prefix + ".rc")
	code, convErr := strconv.Atoi(strings.TrimSpace(string(rc)))
	if err != nil || convErr != nil {
		return outcome{string(stdout), string(stderr) + "\n(no exit code: the NeMo Gym driver did not finish this case)", -1}
	}
	return outcome{string(stdout), string(stderr), code}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ${}'\"") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			out[i] = a
		}
	}
	return out
}

// resolveAll resolves every case with both resolvers: gym once with
// --show-origin to find the ports to pin, then NeMo Gym (one driver per cwd)
// and gym on the same, pinned, arguments.
func (e *env) resolveAll(t *testing.T, cases []oracleCase, timeout time.Duration) []*caseRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	runs := make([]*caseRun, len(cases))
	for i, c := range cases {
		runs[i] = &caseRun{c: c, dir: e.caseDir(c), prefix: filepath.Join(e.out, fmt.Sprintf("case%04d", i))}
	}

	forEach(runs, parallelGym, func(r *caseRun) {
		r.args = e.caseArgs(r.c)
		r.pass1 = e.gymResolve(ctx, r.dir, append([]string{"--show-origin"}, r.args...))
		if r.pass1.code == 0 {
			pins, err := portPins(r.pass1.stdout, firstPinnedPort)
			if err != nil {
				r.pass1 = outcome{r.pass1.stdout, "cannot read gym's --show-origin output: " + err.Error(), -1}
			}
			r.args = append(r.args, pins...)
		}
	})

	var wg sync.WaitGroup
	nemoErr := make(chan error, 2)
	for _, dir := range []string{e.work, e.project} {
		var group []*caseRun
		for _, r := range runs {
			if r.dir == dir {
				group = append(group, r)
			}
		}
		if len(group) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			warnings, err := e.runNeMoGym(ctx, dir, group)
			if err != nil {
				nemoErr <- err
			} else if strings.TrimSpace(warnings) != "" {
				t.Logf("NeMo Gym driver in %s: %s", dir, warnings)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		forEach(runs, parallelGym, func(r *caseRun) { r.ours = e.gymResolve(ctx, r.dir, r.args) })
	}()
	wg.Wait()
	close(nemoErr)
	for err := range nemoErr {
		t.Fatalf("running NeMo Gym's resolver: %v", err)
	}
	for _, r := range runs {
		r.nemo = readOutcome(r.prefix)
	}
	return runs
}

// firstPinnedPort is the first port pinned per case (within NeMo Gym's
// default range, 10001-20000; the head port 11000 is skipped).
const firstPinnedPort = 12001

func (e *env) gymResolve(ctx context.Context, dir string, args []string) outcome {
	stdout, stderr, code, err := e.run(ctx, dir, nil, append([]string{e.gym, "env", "resolve"}, args...)...)
	if err != nil {
		return outcome{stdout, err.Error(), -1}
	}
	return outcome{stdout, stderr, code}
}

// comparison is the result of comparing one case's outcomes.
type comparison struct {
	diffs      []Difference
	nemo, ours *Node // nil when that side failed
	bothFailed bool
	err        error // an output that is not YAML
}

// compare compares the two outcomes of a case: both trees when both
// resolved, else a NeMoFails/OursFails difference.
func (r *caseRun) compare() comparison {
	switch {
	case r.nemo.code != 0 && r.ours.code != 0:
		return comparison{bothFailed: true}
	case r.nemo.code != 0:
		return comparison{diffs: []Difference{{Kind: NeMoFails, NeMo: r.nemo.message(), Ours: "(resolved)"}}}
	case r.ours.code != 0:
		return comparison{diffs: []Difference{{Kind: OursFails, NeMo: "(resolved)", Ours: r.ours.message()}}}
	}
	nemo, err := Parse(r.nemo.stdout)
	if err != nil {
		return comparison{err: fmt.Errorf("NeMo Gym's output is not YAML: %v\n%s", err, r.nemo.stdout)}
	}
	ours, err := Parse(r.ours.stdout)
	if err != nil {
		return comparison{err: fmt.Errorf("gym's output is not YAML: %v\n%s", err, r.ours.stdout)}
	}
	return comparison{diffs: Compare(nemo, ours, exclusions), nemo: nemo, ours: ours}
}

func TestPortPins(t *testing.T) {
	showOrigin := `defaulted:
  resources_servers:
    rs:
      entrypoint: app.py  # /w/rs.yaml:4
      host: 127.0.0.1  # default
      port: 10831  # default
explicit:
  responses_api_agents:
    agent:
      entrypoint: app.py  # /w/a.yaml:4
      port: 8000  # /w/a.yaml:5
unknown_type:
  environment_servers:
    legacy_agent:
      entrypoint: app.py  # /w/rs.yaml:26
not_a_server:
  responses_api_models:
    m:
      foo: 1  # /w/m.yaml:3
slashed:
  responses_api_agents:
    conversational_tool_use/simulation:
      entrypoint: app.py  # /w/c.yaml:3
policy_model:
  responses_api_models:
    openai_model:
      entrypoint: app.py  # /w/o.yaml:4
      port: 19602  # default
config_paths:
- a.yaml  # cli: +config_paths=[a.yaml]
`
	got, err := portPins(showOrigin, 10999)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"++defaulted.resources_servers.rs.port=10999",
		"++unknown_type.environment_servers.legacy_agent.port=11001", // 11000 is the head port
		"++slashed.responses_api_agents={conversational_tool_use/simulation:{port:11002}}",
		"++policy_model.responses_api_models.openai_model.port=11003",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// runScript runs one of NeMo Gym's own functions through script (a
// Python file the test embeds) in the root: inputs are written into the
// shared temp dir under their names, args follow the script (an input's
// name stands for its path), and the lines the script wrote to out (a
// name too) come back.
func (e *env) runScript(t *testing.T, what string, script []byte, inputs map[string][]byte, out string, args ...string) []string {
	t.Helper()
	return e.runScriptEnv(t, nil, what, script, inputs, out, args...)
}

// runScriptEnv is runScript with environ added to the script's environment.
func (e *env) runScriptEnv(t *testing.T, environ []string, what string, script []byte, inputs map[string][]byte, out string, args ...string) []string {
	t.Helper()
	path := func(name string) string { return filepath.Join(e.tmp, name) }
	inputs = maps.Clone(inputs)
	inputs[what+".py"] = script
	for name, data := range inputs {
		if err := os.WriteFile(path(name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	argv := []string{"/opt/nemo-gym/bin/python", path(what + ".py")}
	for _, a := range args {
		if _, ok := inputs[a]; ok || a == out {
			a = path(a)
		}
		argv = append(argv, a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdout, stderr, code, err := e.run(ctx, e.tmp, environ, argv...)
	if err != nil || code != 0 {
		t.Fatalf("NeMo Gym's %s: exit %d, %v\n%s\n%s", what, code, err, stdout, stderr)
	}
	data, err := os.ReadFile(path(out))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}
