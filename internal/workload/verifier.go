package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/python"
	"github.com/nemo-gym-go/gym/internal/server"
)

// VerifierReport is a passing verifier fixture run, in the shape of NeMo
// Gym's VerifierReport (`gym env test NAME --json`).
type VerifierReport struct {
	Name            string       `json:"name"`
	Kind            string       `json:"kind"`
	ResourcesServer string       `json:"resources_server"`
	ManifestPath    string       `json:"manifest_path"`
	FixturePath     string       `json:"fixture_path"`
	Cases           []CaseResult `json:"cases"`
}

// RunOptions are what running a verifier fixture needs: a Python
// resources server's venv is set up as `gym env start` sets it up.
type RunOptions struct {
	Environ  []string
	LookPath func(string) (string, error)
	// Log receives the venv setup, the Python runner's output and a Go
	// server's logs (never stdout, which carries the report).
	Log io.Writer
}

// Exercise validates a workload and runs its resources server's verifier
// fixture, as NeMo Gym's `gym env test NAME` does. A resources server
// built into gym (a Go one) runs in this process, a fresh handler per
// case, its fixture being tests/verifier_cases.jsonl in the first search
// root that has one for it; a Python one runs NeMo Gym's own fixture
// runner (nemo_gym.environment._verifier_runner) in its venv, which reads
// the server's VERIFIER_FIXTURE.
func Exercise(ctx context.Context, o Options, py RunOptions, update bool) (*VerifierReport, *Report, error) {
	r, report, err := validate(ctx, o)
	if err != nil {
		return nil, report, err
	}
	c := r.comp
	if c == nil || c.resources == nil {
		return nil, report, errors.New("The resolved workload has no resources server.")
	}
	m := r.m
	out := &VerifierReport{Name: m.Name, Kind: m.Kind, ResourcesServer: m.ResourcesServer, ManifestPath: m.Path}
	dir := r.resolve(c.resourcesDir)
	if entry := c.resources.entrypoint(); entry != nil && strings.HasSuffix(*entry, ".py") && isFile(filepath.Join(dir, *entry)) {
		return r.exercisePython(ctx, py, dir, *entry, update, report)
	}
	factory, ok := server.Lookup(c.resourcesDir)
	if !ok {
		return nil, report, fmt.Errorf("Resources server %s has neither a Python entrypoint in %s nor a Go implementation built into gym, so its verifier fixture cannot run.", pyRepr(c.resourcesServer), dir)
	}
	fixture := ""
	for _, candidate := range r.roots.Candidates(filepath.Join(c.resourcesDir, FixtureFile)) {
		if !filepath.IsAbs(candidate) {
			candidate = filepath.Join(o.Cwd, candidate)
		}
		if isFile(candidate) {
			fixture = candidate
			break
		}
	}
	if fixture == "" {
		return nil, report, fmt.Errorf("Resources server %s is built into gym and has no verifier fixture: put its cases in %s/%s under a search root", pyRepr(c.resourcesServer), c.resourcesDir, FixtureFile)
	}
	if update && o.InstallRoot != "" && within(realPath(o.InstallRoot), realPath(fixture)) {
		return nil, report, fmt.Errorf("Cannot update a verifier fixture in gym's built-in tree (%s); copy it to %s/%s under a search root of your own and update that one.", fixture, c.resourcesDir, FixtureFile)
	}
	// The config was loaded offline, so it has no ports; the server runs
	// in this process and never listens, so any valid port does.
	cfg := c.config.Config.Clone()
	if inner := cfg.Get(c.resources.name).Get(c.resources.typ).Get(c.resources.impl); inner != nil {
		inner.Set("port", tree.NewInt(0))
	}
	dict := config.Dump(cfg)
	v := &handlerVerifier{newHandler: func() (http.Handler, error) {
		env := map[string]string{config.ConfigDictEnv: dict, config.ConfigPathEnv: c.resources.name}
		rt, err := server.FromEnv(func(k string) (string, bool) {
			if v, ok := env[k]; ok {
				return v, true
			}
			if o.Env.LookupEnv != nil {
				return o.Env.LookupEnv(k)
			}
			return "", false
		})
		if err != nil {
			return nil, err
		}
		rt.Logger = slog.New(slog.NewTextHandler(logTo(py.Log), &slog.HandlerOptions{Level: slog.LevelWarn}))
		h, err := factory(rt)
		if err != nil {
			return nil, err
		}
		// Behind the middleware every served Gym server has, so a case
		// sees what a client would (error mapping, sessions).
		return server.Wrap(rt, h), nil
	}}
	contract := Contract{Low: m.Reward.Low, High: m.Reward.High, HigherIsBetter: m.Reward.HigherIsBetter, Determinism: m.Determinism}
	cases, err := ExerciseFixture(ctx, fixture, v, contract, update)
	if err != nil {
		return nil, report, fmt.Errorf("Verifier fixture for %s %s failed: %w", m.Kind, pyRepr(m.Name), err)
	}
	out.FixturePath, out.Cases = fixture, cases
	return out, report, nil
}

func logTo(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// handlerVerifier scores requests with a Go resources server's handler.
type handlerVerifier struct {
	newHandler func() (http.Handler, error)
}

func (v *handlerVerifier) Verify(ctx context.Context, request json.RawMessage, reseed bool) (float64, error) {
	h, err := v.newHandler()
	if err != nil {
		return 0, &SetupError{Err: err}
	}
	if reseed {
		if _, err := post(ctx, h, "/seed_session", []byte("{}")); err != nil {
			return 0, &SetupError{Err: fmt.Errorf("seed_session: %w", err)}
		}
	}
	body, err := post(ctx, h, "/verify", request)
	if err != nil {
		return 0, err
	}
	var reply struct {
		Reward json.RawMessage `json:"reward"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return 0, fmt.Errorf("the verify reply is not a JSON object: %w", err)
	}
	var reward float64
	if err := json.Unmarshal(reply.Reward, &reward); err != nil || math.IsInf(reward, 0) || math.IsNaN(reward) {
		return 0, fmt.Errorf("returned a non-finite numeric reward: %s", string(reply.Reward))
	}
	return reward, nil
}

// post sends one request to h; a reply that is not 2xx is an error
// carrying its body, as the verifier's exception would carry its message.
func post(ctx context.Context, h http.Handler, path string, body []byte) ([]byte, error) {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code/100 != 2 {
		return nil, fmt.Errorf("%d %s: %s", rec.Code, http.StatusText(rec.Code), strings.TrimSpace(rec.Body.String()))
	}
	return rec.Body.Bytes(), nil
}

// exercisePython runs NeMo Gym's verifier runner in the resources
// server's venv, handing it the run spec NeMo Gym's CLI hands it.
func (r *run) exercisePython(ctx context.Context, py RunOptions, dir, entry string, update bool, report *Report) (*VerifierReport, *Report, error) {
	m := r.m
	log := logTo(py.Log)
	hasReq, hasProject := isFile(filepath.Join(dir, "requirements.txt")), isFile(filepath.Join(dir, "pyproject.toml"))
	if hasReq && hasProject {
		return nil, report, fmt.Errorf("Resources server '%s' must use requirements.txt or pyproject.toml, not both.", dir)
	}
	// As gym env test --resources-server does: the venv is set up first
	// when uv is on PATH (NeMo Gym's runner needs nemo-gym in it), else
	// one made before is used.
	settings := python.Defaults(r.o.Cwd, py.Environ, py.LookPath)
	venv := settings.VenvFor(dir)
	if _, err := settings.UV(); err == nil {
		if err := settings.ResolvePython(ctx); err != nil {
			return nil, report, err
		}
		if venv, err = settings.Ensure(ctx, dir, func(line string) { fmt.Fprintln(log, line) }); err != nil {
			return nil, report, err
		}
	} else if !venv.Present() {
		return nil, report, fmt.Errorf("resources server %s is a Python one: its verifier fixture runs in its venv %s, which does not exist, and uv (to make it) is not on PATH; install uv (pip install uv)", pyRepr(m.ResourcesServer), venv.Dir)
	}
	componentRoot := filepath.Dir(filepath.Dir(dir))
	spec := map[string]any{
		"name": m.Name, "kind": m.Kind, "resources_server": m.ResourcesServer, "manifest_path": m.Path,
		"app_path": filepath.Join(dir, entry), "component_root": componentRoot, "server_dir": dir,
		"bundled_component": false, "reward_range": []float64{m.Reward.Low, m.Reward.High},
		"higher_is_better": m.Reward.HigherIsBetter, "determinism": m.Determinism,
	}
	tmp, err := os.MkdirTemp("", "gym-verifier-")
	if err != nil {
		return nil, report, err
	}
	defer os.RemoveAll(tmp)
	request, result := filepath.Join(tmp, "request.json"), filepath.Join(tmp, "result.json")
	data, _ := json.Marshal(map[string]any{"spec": spec, "update_expected": update})
	if err := os.WriteFile(request, data, 0o600); err != nil {
		return nil, report, err
	}
	cmd := exec.CommandContext(ctx, venv.Python(), "-m", "nemo_gym.environment._verifier_runner", "--request", request, "--result", result)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, venv.Activate(py.Environ), log, log
	runErr := cmd.Run()
	raw, err := os.ReadFile(result)
	if err != nil {
		return nil, report, fmt.Errorf("Verifier runner exited (%v) without producing a result.", runErr)
	}
	var res struct {
		OK     bool            `json:"ok"`
		Error  string          `json:"error"`
		Report *VerifierReport `json:"report"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, report, fmt.Errorf("Could not read verifier result: %w", err)
	}
	if !res.OK {
		if res.Error == "" {
			res.Error = fmt.Sprintf("Verifier runner failed (%v).", runErr)
		}
		return nil, report, errors.New(res.Error)
	}
	if runErr != nil {
		return nil, report, fmt.Errorf("Verifier runner exited: %w", runErr)
	}
	if res.Report == nil {
		return nil, report, errors.New("Verifier runner returned an invalid report: no report")
	}
	for i := range res.Report.Cases {
		if res.Report.Cases[i].ObservedRewards == nil {
			res.Report.Cases[i].ObservedRewards = []float64{}
		}
	}
	return res.Report, report, nil
}
