package python

import (
	"strings"
	"testing"
)

func TestRayHeadWatch(t *testing.T) {
	cases := []struct {
		lines []string
		want  string
	}{
		{[]string{"INFO scripts.py:1043 -- Local node IP: 127.0.0.1", "SUCC scripts.py:1085 -- Ray runtime started."}, "127.0.0.1:6390"},
		{[]string{"INFO scripts.py:1043 -- Local node IP: 192.0.2.2", "noise", "SUCC scripts.py:1085 -- Ray runtime started."}, "192.0.2.2:6390"},
		{[]string{"SUCC scripts.py:1085 -- Ray runtime started."}, ""},
		{[]string{"INFO -- Local node IP: ::1", "Ray runtime started."}, "[::1]:6390"},
	}
	for _, tc := range cases {
		w := &RayHead{Port: 6390}
		got := ""
		for _, l := range tc.lines {
			if addr, ok := w.Watch(l); ok {
				got = addr
			}
		}
		if got != tc.want {
			t.Errorf("%q: address %q, want %q", tc.lines, got, tc.want)
		}
	}
}

func TestRayHeadEnvKeepsAUserDrain(t *testing.T) {
	if env := RayHeadEnv([]string{"A=1"}); len(env) != 2 || env[1] != "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0" {
		t.Errorf("env = %q", env)
	}
	if env := RayHeadEnv([]string{"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=5"}); len(env) != 1 {
		t.Errorf("env = %q", env)
	}
}

func TestRayAuthEnv(t *testing.T) {
	a, err := RayAuthEnv([]string{"A=1"})
	if err != nil || len(a) != 2 || a[0] != "RAY_AUTH_MODE=token" || len(a[1]) != len("RAY_AUTH_TOKEN=")+64 {
		t.Fatalf("env = %q, %v", a, err)
	}
	b, _ := RayAuthEnv(nil)
	if a[1] == b[1] {
		t.Error("two runs got the same token")
	}
	if own, _ := RayAuthEnv([]string{"RAY_AUTH_MODE=disabled"}); own != nil {
		t.Errorf("a user's RAY_AUTH_MODE was overridden: %q", own)
	}
}

// Ray's workers bind outside the range the run's servers take their ports
// from: above it where there is room below the ephemeral ports, else
// below it, else where Ray's default puts them.
func TestRayWorkerPorts(t *testing.T) {
	for _, tc := range []struct {
		servers PortRange
		want    PortRange
		ok      bool
	}{
		{PortRange{10001, 20000}, PortRange{20001, 29998}, true}, // NeMo Gym's default range
		{PortRange{10001, 30000}, PortRange{30001, 32767}, true},
		{PortRange{20000, 32000}, PortRange{10002, 19999}, true},
		{PortRange{3000, 31900}, PortRange{1024, 2999}, true},
		{PortRange{1500, 32000}, PortRange{}, false},
		{PortRange{40000, 50000}, PortRange{30002, 32767}, true},
	} {
		got, ok := rayWorkerPorts(tc.servers)
		if got != tc.want || ok != tc.ok {
			t.Errorf("rayWorkerPorts(%v) = %v, %v; want %v, %v", tc.servers, got, ok, tc.want, tc.ok)
		}
	}
	argv := strings.Join(RayHeadArgv(Venv{Dir: "/v"}, 41000, 41001, "/tmp/r", PortRange{10001, 20000}), " ")
	for _, want := range []string{"--port=41000", "--ray-client-server-port=41001", "--min-worker-port=20001", "--max-worker-port=29998"} {
		if !strings.Contains(argv, want) {
			t.Errorf("RayHeadArgv = %s, without %s", argv, want)
		}
	}
}
