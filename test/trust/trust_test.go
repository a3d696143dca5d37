// Package trust proves gym's trust boundary across a real network: a test
// host in a network namespace of its own reaches a run whose servers bind
// every interface, and is refused what carries a secret unless it presents
// the run's token.
package trust

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/test/gymbin"
)

// testNet is a network namespace joined to this host by a veth pair.
type testNet struct {
	ns     string
	hostIP string // this host's end, which the namespace reaches it at
}

func newTestNet(t *testing.T) *testNet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip (iproute2) to make a network namespace")
	}
	id := os.Getpid() % 200
	n := &testNet{ns: fmt.Sprintf("gymtrust%d", os.Getpid()), hostIP: fmt.Sprintf("10.213.%d.1", id)}
	hostEnd, nsEnd := fmt.Sprintf("gth%d", os.Getpid()), fmt.Sprintf("gtn%d", os.Getpid())
	steps := [][]string{
		{"netns", "add", n.ns},
		{"link", "add", hostEnd, "type", "veth", "peer", "name", nsEnd},
		{"link", "set", nsEnd, "netns", n.ns},
		{"addr", "add", n.hostIP + "/30", "dev", hostEnd},
		{"link", "set", hostEnd, "up"},
		{"-n", n.ns, "addr", "add", fmt.Sprintf("10.213.%d.2/30", id), "dev", nsEnd},
		{"-n", n.ns, "link", "set", nsEnd, "up"},
		{"-n", n.ns, "link", "set", "lo", "up"},
	}
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", hostEnd).Run()
		exec.Command("ip", "netns", "del", n.ns).Run()
	})
	for i, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			if i == 0 {
				t.Skipf("cannot make a network namespace here: %v: %s", err, out)
			}
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return n
}

// get fetches url from inside the namespace, as another machine would,
// and returns the status code and body.
func (n *testNet) get(t *testing.T, method, url string, header ...string) (int, string) {
	t.Helper()
	args := []string{"netns", "exec", n.ns, "curl", "-s", "-m", "10", "-X", method, "-o", "-", "-w", "\n%{http_code}", url}
	for _, h := range header {
		args = append(args, "-H", h)
	}
	if method == "POST" {
		args = append(args, "-H", "Content-Type: application/json", "-d", `{"input":"hi"}`)
	}
	out, err := exec.Command("ip", args...).Output()
	if err != nil {
		t.Fatalf("curl %s from the test host: %v", url, err)
	}
	i := strings.LastIndexByte(string(out), '\n')
	status, _ := strconv.Atoi(string(out[i+1:]))
	return status, string(out[:max(i, 0)])
}

func TestAnotherMachineNeedsTheRunToken(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl for the test host")
	}
	n := newTestNet(t)
	gym, dir := buildGym(t)
	head := freePort(t)
	start := startRun(t, gym, dir, "env", "start", "--model-type", "replay_model",
		"++default_host=0.0.0.0", "++head_server.host=0.0.0.0", "++head_server.port="+strconv.Itoa(head),
		"+policy_api_key=sk-do-not-leak")
	modelPort := waitReady(t, start.out)

	headURL := fmt.Sprintf("http://%s:%d", n.hostIP, head)
	modelURL := fmt.Sprintf("http://%s:%d", n.hostIP, modelPort)
	token := runToken(t, start.cmd.Process.Pid)
	tests := []struct {
		name, method, url string
		header            []string
		want              int
		leaks             bool // whether the answer may hold the API key
	}{
		{"head liveness is open", "GET", headURL + "/", nil, 200, false},
		{"head config without the token", "GET", headURL + "/global_config_dict_yaml", nil, 401, false},
		{"head config with a wrong token", "GET", headURL + "/global_config_dict_yaml", []string{"X-Gym-Run-Token: guess"}, 401, false},
		{"head config with the run's token", "GET", headURL + "/global_config_dict_yaml", []string{"X-Gym-Run-Token: " + token}, 200, true},
		{"model call without the token", "POST", modelURL + "/v1/responses", nil, 401, false},
		{"model liveness is open", "GET", modelURL + "/", nil, 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := n.get(t, tt.method, tt.url, tt.header...)
			if status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, body)
			}
			if !tt.leaks && strings.Contains(body, "sk-do-not-leak") {
				t.Errorf("the API key reached the test host: %s", body)
			}
			if tt.leaks && !strings.Contains(body, "sk-do-not-leak") {
				t.Errorf("the config is not the run's: %s", body)
			}
		})
	}
}

// buildGym builds gym into a temp dir, which it returns too.
func buildGym(t *testing.T) (gym, dir string) {
	t.Helper()
	dir = t.TempDir()
	gym, err := gymbin.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	return gym, dir
}

// run is a gym command running in the background for a test.
type run struct {
	cmd *exec.Cmd
	out io.Reader
}

// startRun starts gym with args in dir, with the repository as install
// root, and interrupts it at the test's end.
func startRun(t *testing.T, gym, dir string, args ...string) *run {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gym, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GYM_INSTALL_ROOT="+repo, "NO_COLOR=1", "NEMO_GYM_EXTRA_ROOTS=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	return &run{cmd: cmd, out: out}
}

// Servers on this host, the collector on the test host: gym eval run
// --no-serve from another machine runs every rollout with the run's token,
// and is refused the config without it.
func TestCollectorOnAnotherMachine(t *testing.T) {
	n := newTestNet(t)
	gym, dir := buildGym(t)
	head := freePort(t)
	start := startRun(t, gym, dir, "env", "start", "--benchmark", "mcqa_example", "--model-type", "replay_model",
		"++default_host="+n.hostIP, "++head_server.host="+n.hostIP, "++head_server.port="+strconv.Itoa(head))
	waitReady(t, start.out)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	collect := func(output string, env ...string) (string, error) {
		args := append([]string{"netns", "exec", n.ns, "env", "GYM_INSTALL_ROOT=" + repo, "NO_COLOR=1"}, env...)
		args = append(args, gym, "eval", "run", "--no-serve", "--agent", "mcqa_example_mcqa_simple_agent",
			"--input", filepath.Join(repo, "benchmarks/mcqa_example/data/mcqa_example_benchmark.jsonl"),
			"-o", filepath.Join(dir, output), "++head_server.host="+n.hostIP, "++head_server.port="+strconv.Itoa(head))
		out, err := exec.Command("ip", args...).CombinedOutput()
		return string(out), err
	}
	if out, err := collect("without/r.jsonl"); err == nil || !strings.Contains(out, "401 Unauthorized") || !strings.Contains(out, "GYM_RUN_TOKEN") {
		t.Errorf("without the token: %v\n%s", err, out)
	}
	out, err := collect("with/r.jsonl", "GYM_RUN_TOKEN="+runToken(t, start.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("with the token: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "with/r.jsonl"))
	if err != nil || strings.Count(string(data), "\n") != 5 {
		t.Errorf("rollouts collected from the test host: %v\n%s", err, data)
	}
}

var listening = regexp.MustCompile(`'policy_model' listening on http://[^:]+:(\d+)`)

// waitReady reads gym's output until every server is ready and returns
// the model server's port.
func waitReady(t *testing.T, out interface{ Read([]byte) (int, error) }) int {
	t.Helper()
	sc := bufio.NewScanner(out)
	port := 0
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if m := listening.FindStringSubmatch(line); m != nil {
			port, _ = strconv.Atoi(m[1])
		}
		if strings.Contains(line, "servers ready") {
			go func() {
				for sc.Scan() {
				}
			}()
			if port == 0 {
				t.Fatalf("no model server port in:\n%s", strings.Join(seen, "\n"))
			}
			return port
		}
	}
	t.Fatalf("gym env start ended before its servers were ready:\n%s", strings.Join(seen, "\n"))
	return 0
}

// runToken reads the token gym gave its servers from a server's
// environment, as only a process of the run's own user could.
func runToken(t *testing.T, gymPID int) string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(gymPID) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "GYM_RUN_TOKEN="); ok {
				return v
			}
		}
	}
	t.Fatal("no server of the run has GYM_RUN_TOKEN")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
