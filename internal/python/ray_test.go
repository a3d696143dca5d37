package python

import "testing"

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
