// Package nemogym proves gym against NeMo Gym itself: NeMo Gym's published
// package (nemo-gym 0.7.0 from PyPI, with the server directories it ships)
// in a Debian root that has the Python it needs (see root.sh). The tests
// skip, saying why, unless GYM_NEMO_GYM_ROOT names that root; .ci/run
// builds it and sets it.
package nemogym

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/test/gymbin"
)

// sitePackages is where the root's venv holds nemo-gym and the server
// directories it ships.
const sitePackages = "/opt/nemo-gym/lib/python3.13/site-packages"

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// harness is one test's workspace, with gym's static binary in it. It lives
// inside the root, on the filesystem of the root's warm uv cache, so venvs
// are hardlinked from the cache rather than copied: work is its path from
// here, in its path inside the root.
type harness struct {
	t    *testing.T
	root string
	work string
	in   string
	gym  string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	root := os.Getenv("GYM_NEMO_GYM_ROOT")
	if root == "" {
		t.Skip("GYM_NEMO_GYM_ROOT is not set: no root with nemo-gym 0.7.0 (test/nemogym/root.sh builds one; .ci/run sets it)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to chroot into the nemo-gym root")
	}
	// /proc/<pid>/root names the real path; compare against the same.
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatalf("GYM_NEMO_GYM_ROOT: %v", err)
	}
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "gym-nemogym-bin-"); buildErr != nil {
			return
		}
		_, buildErr = gymbin.Build(buildDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	work, err := os.MkdirTemp(filepath.Join(root, "tmp"), "gym-nemogym-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	in := strings.TrimPrefix(work, root)
	h := &harness{t: t, root: root, work: work, in: in, gym: filepath.Join(in, "gym")}
	data, err := os.ReadFile(filepath.Join(buildDir, "gym"))
	if err != nil {
		t.Fatal(err)
	}
	h.write("gym", string(data), 0o755)
	return h
}

func (h *harness) write(rel, content string, mode os.FileMode) {
	h.t.Helper()
	path := filepath.Join(h.work, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		h.t.Fatal(err)
	}
}

// copyShipped copies a server directory nemo-gym ships (e.g.
// resources_servers/example_single_tool_call) into the workspace, leaving
// out any venv a previous run made.
func (h *harness) copyShipped(rel string) {
	h.t.Helper()
	src := filepath.Join(h.root, sitePackages, rel)
	dst := filepath.Join(h.work, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		h.t.Fatalf("copy %s: %v\n%s", rel, err, out)
	}
	os.RemoveAll(filepath.Join(dst, ".venv"))
	os.RemoveAll(filepath.Join(dst, "__pycache__"))
}

// command runs a shell command line inside the root, in the workspace.
// Ray is kept on loopback, and venv installs share the root's warm uv cache.
func (h *harness) command(ctx context.Context, line string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "./inroot.sh", h.root,
		"--env", "HOME="+filepath.Join(h.in, "home"),
		"--env", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0",
		"--env", "NO_COLOR=1",
		"--", "/bin/bash", "-c", "cd "+h.in+" && exec "+line)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = time.Minute
	return cmd
}

// run runs a command line to completion and returns its output.
func (h *harness) run(ctx context.Context, line string) (string, error) {
	out, err := h.command(ctx, line).CombinedOutput()
	return string(out), err
}

// background is a long-running command (a `gym env start`) whose output is
// collected as it comes.
type background struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan error
}

func (h *harness) start(ctx context.Context, line string) *background {
	h.t.Helper()
	b := &background{cmd: h.command(ctx, line), done: make(chan error, 1)}
	pr, pw := io.Pipe()
	b.cmd.Stdout, b.cmd.Stderr = pw, pw
	if err := b.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			b.mu.Lock()
			b.out.WriteString(sc.Text() + "\n")
			b.mu.Unlock()
		}
	}()
	go func() {
		err := b.cmd.Wait()
		pw.Close()
		b.done <- err
	}()
	h.t.Cleanup(func() {
		b.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-b.done:
		case <-time.After(time.Minute):
			b.cmd.Process.Kill()
		}
	})
	return b
}

func (b *background) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

// waitFor waits until the output holds want, failing on exit or timeout.
func (b *background) waitFor(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for !strings.Contains(b.output(), want) {
		select {
		case err := <-b.done:
			b.done <- err
			t.Fatalf("exited (%v) before printing %q:\n%s", err, want, b.output())
		case <-deadline:
			t.Fatalf("no %q within %s:\n%s", want, timeout, b.output())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop sends sig and waits for the command to end, returning its exit code.
func (b *background) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	b.cmd.Process.Signal(sig)
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after %s:\n%s", sig, b.output())
	}
	return b.cmd.ProcessState.ExitCode()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// instance is one entry of a head server's /server_instances.
type instance struct {
	ProcessName string `json:"process_name"`
	ServerType  string `json:"server_type"`
	Name        string `json:"name"`
	DirPath     string `json:"dir_path"`
	URL         string `json:"url"`
}

func serverInstances(t *testing.T, headPort int) []instance {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(headPort) + "/server_instances")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []instance
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func urlOf(t *testing.T, instances []instance, name string) string {
	t.Helper()
	for _, in := range instances {
		if in.ProcessName == name {
			return in.URL
		}
	}
	t.Fatalf("no instance %s in %+v", name, instances)
	return ""
}

// postRun sends one task row to an agent's /run and returns the reward.
func postRun(t *testing.T, agentURL, row string) float64 {
	t.Helper()
	resp, err := http.Post(agentURL+"/run", "application/json", strings.NewReader(row))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Reward   *float64 `json:"reward"`
		Response struct {
			Output []json.RawMessage `json:"output"`
		} `json:"response"`
	}
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusOK || out.Reward == nil {
		t.Fatalf("/run answered %s: %s", resp.Status, body)
	}
	if len(out.Response.Output) == 0 {
		t.Errorf("/run's response has no output: %s", body)
	}
	return *out.Reward
}

// rootProcesses lists the processes running inside the root whose command
// line mentions one of words (Ray's processes, or the workspace), as
// "pid command".
func rootProcesses(root string, words ...string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if r, err := os.Readlink(filepath.Join("/proc", e.Name(), "root")); err != nil || r != root {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
		for _, w := range words {
			if strings.Contains(cmdline, w) {
				found = append(found, fmt.Sprintf("%d %s", pid, cmdline))
				break
			}
		}
	}
	return found
}

// rayWords pick out a Ray cluster's processes.
var rayWords = []string{"raylet", "gcs_server", "ray::", "ray start", "dashboard", "runtime_env"}

// assertNothingLeft waits up to timeout for no process of the run (Ray's
// or one started from the workspace) to be left in the root.
func (h *harness) assertNothingLeft(t *testing.T, timeout time.Duration) {
	t.Helper()
	words := append([]string{h.in}, rayWords...)
	deadline := time.Now().Add(timeout)
	for {
		left := rootProcesses(h.root, words...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				pid, _ := strconv.Atoi(strings.Fields(p)[0])
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("left behind after %s:\n  %s", timeout, strings.Join(left, "\n  "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
