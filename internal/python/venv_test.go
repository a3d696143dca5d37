package python

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestStepsAreNeMoGymsCommands checks each case of NeMo Gym's
// setup_env_command, argument for argument.
func TestStepsAreNeMoGymsCommands(t *testing.T) {
	deps := []string{"ray[default]==2.60.0", "openai==2.44.0"}
	cases := []struct {
		name     string
		files    map[string]string // relative to the root holding resources_servers/srv
		settings Settings
		environ  []string
		want     []Step
	}{
		{
			name:  "requirements outside a checkout: nemo-gym from the index, ../.. lines dropped",
			files: map[string]string{"requirements.txt": "-e nemo-gym[dev] @ ../../\nsympy==1.13\n"},
			want: []Step{
				{Argv: []string{"uv", "venv", "--seed", "--allow-existing", "--python", "3.13.18", "V"}},
				{Argv: []string{"uv", "pip", "install", "-r", "/dev/stdin", "ray[default]==2.60.0", "openai==2.44.0"}, Stdin: "nemo-gym==0.7.0\nsympy==1.13\n"},
			},
		},
		{
			name:  "requirements in a checkout, with overrides",
			files: map[string]string{"requirements.txt": "-e nemo-gym[dev] @ ../../\n", "overrides.txt": "x==1\n", "../../pyproject.toml": ""},
			want: []Step{
				{Argv: []string{"uv", "venv", "--seed", "--allow-existing", "--python", "3.13.18", "V"}},
				{Argv: []string{"uv", "pip", "install", "--override", "overrides.txt", "-r", "requirements.txt", "ray[default]==2.60.0", "openai==2.44.0"}},
			},
		},
		{
			name:     "requirements outside a checkout with overrides, verbose, uv_pip_set_python",
			files:    map[string]string{"requirements.txt": "a\nb", "overrides.txt": "x==1\n"},
			settings: Settings{Verbose: true, SetPython: true},
			want: []Step{
				{Argv: []string{"uv", "venv", "--seed", "--allow-existing", "--python", "3.13.18", "V"}},
				{Argv: []string{"uv", "pip", "install", "-v", "--python", "V/bin/python", "--override", "overrides.txt", "-r", "/dev/stdin", "ray[default]==2.60.0", "openai==2.44.0"}, Stdin: "nemo-gym==0.7.0\na\nb\n"},
			},
		},
		{
			name:  "pyproject in a checkout",
			files: map[string]string{"pyproject.toml": "", "../../pyproject.toml": ""},
			want: []Step{
				{Argv: []string{"uv", "venv", "--seed", "--allow-existing", "--python", "3.13.18", "V"}},
				{Argv: []string{"uv", "pip", "install", "-e", ".", "ray[default]==2.60.0", "openai==2.44.0"}},
			},
		},
		{
			// uv reads the index URLs from its environment; they carry
			// credentials, so they are not repeated on the command line.
			name:    "pyproject outside a checkout, pre-releases and custom indexes",
			files:   map[string]string{"pyproject.toml": ""},
			environ: []string{"NEMO_GYM_ALLOW_PRERELEASE=True", "UV_INDEX_URL=https://u:secret@i/simple", "UV_EXTRA_INDEX_URL=https://a https://b"},
			want: []Step{
				{Argv: []string{"uv", "venv", "--seed", "--allow-existing", "--python", "3.13.18", "V"}},
				{Argv: []string{"uv", "pip", "install", "--pre", "--index-strategy", "unsafe-best-match", "fastapi<1.0", "nemo-gym==0.7.0"}},
				{Argv: []string{"uv", "pip", "install", "--no-sources", "-e", ".", "ray[default]==2.60.0", "openai==2.44.0"}},
			},
		},
		{
			name:    "an explicit index strategy wins",
			files:   map[string]string{"pyproject.toml": ""},
			environ: []string{"NEMO_GYM_ALLOW_PRERELEASE=true", "UV_INDEX_STRATEGY=first-index"},
			want: []Step{
				{Argv: []string{"uv", "venv", "--seed", "--allow-existing", "--python", "3.13.18", "V"}},
				{Argv: []string{"uv", "pip", "install", "--pre", "fastapi<1.0", "--index-strategy", "first-index", "nemo-gym==0.7.0"}},
				{Argv: []string{"uv", "pip", "install", "--no-sources", "-e", ".", "ray[default]==2.60.0", "openai==2.44.0"}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "a", "b")
			dir := filepath.Join(root, "resources_servers", "srv")
			for name, content := range tc.files {
				write(t, filepath.Join(dir, name), content)
			}
			s := tc.settings
			s.VenvRoot, s.PythonVersion, s.Deps, s.NemoGymVersion, s.Environ = "/venvs", "3.13.18", deps, NemoGymVersion, tc.environ
			got, err := s.Steps("uv", dir)
			if err != nil {
				t.Fatal(err)
			}
			venv := "/venvs/resources_servers/srv/.venv"
			for i := range tc.want {
				for j, a := range tc.want[i].Argv {
					tc.want[i].Argv[j] = strings.Replace(a, "V", venv, 1)
				}
				if tc.want[i].Argv[len(tc.want[i].Argv)-1] == "V" {
					tc.want[i].Argv[len(tc.want[i].Argv)-1] = venv
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("steps\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestStepsRefuseAmbiguousOrEmptyDirectories(t *testing.T) {
	both := t.TempDir()
	write(t, filepath.Join(both, "pyproject.toml"), "")
	write(t, filepath.Join(both, "requirements.txt"), "")
	neither := t.TempDir()
	for dir, want := range map[string]string{both: "found both pyproject.toml and requirements.txt", neither: "missing pyproject.toml or requirements.txt"} {
		if _, err := (Settings{VenvRoot: "/v"}).Steps("uv", dir); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: err = %v, want %q naming the directory", dir, err, want)
		}
	}
}

func TestFromConfig(t *testing.T) {
	cases := []struct {
		yaml    string
		check   func(Settings) bool
		wantErr string
	}{
		{yaml: "a: 1\n", check: func(s Settings) bool {
			return reflect.DeepEqual(s.Deps, DefaultDeps()) && s.VenvRoot == "/cwd" && s.PythonVersion == "" && s.NemoGymVersion == NemoGymVersion
		}},
		{yaml: "uv_venv_dir: venvs\npython_version: 3.13\nskip_venv_if_present: true\nuv_pip_set_python: true\npip_install_verbose: 1\nuv_lock_timeout_seconds: 900\nnemo_gym_version: 0.6.0\n", check: func(s Settings) bool {
			return s.VenvRoot == "/cwd/venvs" && s.PythonVersion == "3.13" && s.SkipIfPresent && s.SetPython && s.Verbose && s.LockTimeout == "900" && s.NemoGymVersion == "0.6.0"
		}},
		{yaml: "head_server_deps: [ray==1]\n", check: func(s Settings) bool { return reflect.DeepEqual(s.Deps, []string{"ray==1"}) }},
		{yaml: "head_server_deps: ray==1\n", wantErr: "head_server_deps must be a list"},
		{yaml: "head_server_deps: [ray==1, 3]\n", wantErr: "head_server_deps[1] must be a requirement string"},
		{yaml: "nemo_gym_version: 7\n", wantErr: "nemo_gym_version must be a version string"},
	}
	for _, tc := range cases {
		cfg, err := config.ParseChildConfig(tc.yaml)
		if err != nil {
			t.Fatal(err)
		}
		value := func(key string) (*tree.Node, error) { return cfg.Get(key), nil }
		s, err := FromConfig(value, "/cwd", nil, exec.LookPath)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case !tc.check(s):
			t.Errorf("%q: settings %+v", tc.yaml, s)
		}
	}
}

// fakeUV is a uv that logs each call and makes a venv the way uv venv
// would look to gym; `pip install` fails when FAKE_UV_FAIL is set.
const fakeUV = `#!/bin/sh
echo "uv $*" >> "$FAKE_UV_LOG"
case "$1" in
venv) for last; do :; done; mkdir -p "$last/bin"; : > "$last/bin/python"; : > "$last/bin/activate" ;;
pip) if [ -n "$FAKE_UV_FAIL" ]; then echo "error: No solution found when resolving dependencies" >&2; exit 1; fi
     echo "installed into $VIRTUAL_ENV" ;;
esac
`

func fakeSettings(t *testing.T) (Settings, string, string) {
	t.Helper()
	tmp := t.TempDir()
	write(t, filepath.Join(tmp, "bin", "uv"), fakeUV)
	dir := filepath.Join(tmp, "root", "resources_servers", "srv")
	write(t, filepath.Join(dir, "requirements.txt"), "sympy\n")
	log := filepath.Join(tmp, "uv.log")
	s := Settings{
		VenvRoot: filepath.Join(tmp, "venvs"), PythonVersion: "3.13.18", Deps: DefaultDeps(), NemoGymVersion: NemoGymVersion,
		Environ:  []string{"PATH=/usr/bin:/bin", "FAKE_UV_LOG=" + log},
		LookPath: func(name string) (string, error) { return filepath.Join(tmp, "bin", name), nil },
	}
	return s, dir, log
}

func TestEnsureBuildsMarksAndSkips(t *testing.T) {
	s, dir, log := fakeSettings(t)
	var lines []string
	emit := func(l string) { lines = append(lines, l) }
	venv, err := s.Ensure(context.Background(), dir, emit)
	if err != nil {
		t.Fatal(err)
	}
	if !venv.complete() {
		t.Fatalf("venv %s not marked complete", venv.Dir)
	}
	if want := "installed into " + venv.Dir; !reflect.DeepEqual(lines, []string{want}) {
		t.Errorf("emitted %q, want the installer's own line %q", lines, want)
	}
	// Without skip_venv_if_present, every start installs again, as NeMo Gym does.
	if _, err := s.Ensure(context.Background(), dir, emit); err != nil {
		t.Fatal(err)
	}
	s.SkipIfPresent = true
	if _, err := s.Ensure(context.Background(), dir, emit); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), "uv venv"); n != 2 {
		t.Errorf("uv venv ran %d times, want 2 (skip_venv_if_present reuses the third time):\n%s", n, data)
	}
}

func TestEnsureFailsWithTheInstallersError(t *testing.T) {
	s, dir, _ := fakeSettings(t)
	s.Environ = append(s.Environ, "FAKE_UV_FAIL=1")
	venv, err := s.Ensure(context.Background(), dir, func(string) {})
	var setup *SetupError
	if !errors.As(err, &setup) {
		t.Fatalf("err = %v, want a SetupError", err)
	}
	for _, want := range []string{"uv pip install", "exited with code 1", "No solution found when resolving dependencies", dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if venv.complete() {
		t.Error("a failed setup left its venv marked complete")
	}
	// skip_venv_if_present reuses a venv only when it has bin/python and
	// bin/activate; this one lost its python, so it is set up again.
	s.SkipIfPresent = true
	s.Environ = s.Environ[:len(s.Environ)-1]
	os.Remove(venv.Python())
	if _, err := s.Ensure(context.Background(), dir, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if !venv.complete() {
		t.Error("the retried setup did not finish the venv")
	}
}

func TestEnsureWithoutUV(t *testing.T) {
	s, dir, _ := fakeSettings(t)
	s.LookPath = func(string) (string, error) { return "", exec.ErrNotFound }
	if _, err := s.Ensure(context.Background(), dir, func(string) {}); err == nil || !strings.Contains(err.Error(), "uv is not on PATH") {
		t.Errorf("err = %v", err)
	}
}

func TestActivate(t *testing.T) {
	got := Venv{Dir: "/v/.venv"}.Activate([]string{"A=1", "PATH=/usr/bin", "VIRTUAL_ENV=/old", "PYTHONHOME=/x"})
	want := []string{"A=1", "VIRTUAL_ENV=/v/.venv", "PATH=/v/.venv/bin:/usr/bin"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A cancelled setup ends at once, as a cancellation (not as uv failing),
// and leaves no installer process behind, grandchildren included.
func TestEnsureCancelledEndsTheWholeInstaller(t *testing.T) {
	s, dir, _ := fakeSettings(t)
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	write(t, filepath.Join(filepath.Dir(dir), "..", "..", "bin", "uv"), `#!/bin/sh
case "$1" in
venv) for last; do :; done; mkdir -p "$last/bin"; : > "$last/bin/python"; : > "$last/bin/activate" ;;
pip) sleep 30 & echo $! > `+pidFile+`; wait ;;
esac
`)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(pidFile); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, err := s.Ensure(ctx, dir, func(string) {})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled setup took %s", d)
	}
	data, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the installer's child %d outlived the cancelled setup", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestVenvVersion(t *testing.T) {
	for cfg, want := range map[string]string{
		"home = /usr/bin\nuv = 0.13.9\nversion_info = 3.13.18\n": "3.13.18",
		"home = /usr/bin\nversion = 3.11.7\n":                    "3.11.7",
		"home = /usr/bin\n":                                      "",
	} {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "pyvenv.cfg"), cfg)
		if got := (Venv{Dir: dir}).Version(); got != want {
			t.Errorf("%q: version %q, want %q", cfg, got, want)
		}
	}
	if got := (Venv{Dir: t.TempDir()}).Version(); got != "" {
		t.Errorf("no pyvenv.cfg: version %q", got)
	}
}

// With no Python at all, the error says what to install.
func TestResolvePythonWithoutAnyPython(t *testing.T) {
	s, _, _ := fakeSettings(t)
	s.PythonVersion = ""
	uv := filepath.Join(t.TempDir(), "uv")
	write(t, uv, "#!/bin/sh\necho 'error: No interpreter found' >&2\nexit 2\n")
	s.LookPath = func(string) (string, error) { return uv, nil }
	err := s.ResolvePython(context.Background())
	var none *NoPythonError
	if !errors.As(err, &none) || !strings.Contains(err.Error(), "uv python install 3.13") || !strings.Contains(err.Error(), "++python_version=") {
		t.Errorf("err = %v", err)
	}
}
