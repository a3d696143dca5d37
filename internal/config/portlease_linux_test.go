package config

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// leased is whether l can take port (or holds it already).
func leased(l *portLeases, port int) bool {
	_, ok := l.take(port)
	return ok
}

// requireLeases skips a test where open file locks do not work (Linux
// before 3.15), and gym falls back to the bind check alone.
func requireLeases(t *testing.T) {
	t.Helper()
	f, err := openLeaseFile(filepath.Join(t.TempDir(), "probe.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lockByte(f, 1); err != nil {
		t.Skipf("no open file locks here (%v): ports are bind-checked only", err)
	}
}

// twoOpens is two opens of one new lease file, as two processes have.
func twoOpens(t *testing.T) (a, b *portLeases) {
	path := filepath.Join(t.TempDir(), "ports.lock")
	return &portLeases{path: path}, &portLeases{path: path}
}

// Leases on one file conflict between its opens, as between processes; a
// release, or the holder's re-take, is immediate.
func TestPortLeases(t *testing.T) {
	requireLeases(t)
	a, b := twoOpens(t)
	if !leased(a, 15000) {
		t.Fatal("a cannot take a port nobody holds")
	}
	if !leased(a, 15000) {
		t.Fatal("a cannot take again a port it holds")
	}
	if leased(b, 15000) {
		t.Fatal("b took a port a holds")
	}
	if !leased(b, 15001) {
		t.Fatal("b cannot take the next port")
	}
	a.release(15000)
	if !leased(b, 15000) {
		t.Fatal("b cannot take a port a released")
	}
}

// free leases a port it finds free, and gives back one a bind refuses.
func TestPortLeasesFree(t *testing.T) {
	requireLeases(t)
	a, b := twoOpens(t)
	busy, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	if a.free(port) {
		t.Fatalf("port %d is bound, and free says it is free", port)
	}
	if !leased(b, port) {
		t.Fatal("free kept the lease of a port it found bound")
	}
	b.release(port)
	busy.Close()
	if !a.free(port) {
		t.Fatalf("port %d is unbound and unleased, and free says it is not free", port)
	}
	if leased(b, port) || b.free(port) {
		t.Fatal("a port free handed out is not leased")
	}
}

// A port this process leased in an earlier resolution stays leased when a
// later one finds it bound: only a lease free took itself is given back.
func TestPortLeasesFreeKeepsAnEarlierLease(t *testing.T) {
	requireLeases(t)
	a, b := twoOpens(t)
	port := twoFreePorts(t)
	if !a.free(port) {
		t.Fatalf("port %d is not free", port)
	}
	busy, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if a.free(port) {
		t.Fatalf("port %d is bound, and free says it is free", port)
	}
	if leased(b, port) {
		t.Fatal("a's second look at its own port gave up its lease")
	}
}

// Without its file (a temporary directory that cannot be written), leasing
// gives way to the bind check alone.
func TestPortLeasesWithoutTheFile(t *testing.T) {
	l := &portLeases{path: filepath.Join(t.TempDir(), "missing", "ports.lock")}
	if !leased(l, 15000) {
		t.Fatal("take refused a port without a lease file")
	}
}

// A lease file that is a link, has another link, may be written by others
// or is another user's is not used: another user could hold every port in
// it.
func TestLeaseFileMustBeTheUsers(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if f, err := openLeaseFile(link); err == nil {
		f.Close()
		t.Error("opened a lease file that is a link")
	}
	if err := os.Link(target, filepath.Join(dir, "hard.lock")); err != nil {
		t.Fatal(err)
	}
	if f, err := openLeaseFile(filepath.Join(dir, "hard.lock")); err == nil {
		f.Close()
		t.Error("opened a lease file with another link")
	}
	open := filepath.Join(dir, "open.lock")
	if err := os.WriteFile(open, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o622); err != nil {
		t.Fatal(err)
	}
	if f, err := openLeaseFile(open); err == nil {
		f.Close()
		t.Error("opened a lease file others may write")
	}
	if os.Getuid() != 0 {
		return // only root can give a file away
	}
	theirs := filepath.Join(dir, "theirs.lock")
	if err := os.WriteFile(theirs, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if f, err := openLeaseFile(theirs); err == nil {
		f.Close()
		t.Error("opened another user's lease file")
	}
	if f, err := openLeaseFile(filepath.Join(dir, "ours.lock")); err != nil {
		t.Errorf("cannot open a new lease file: %v", err)
	} else {
		f.Close()
	}
}

// holdLease starts this test binary as another process that leases port
// in the lease file at path, and returns once it has; stop ends it.
func holdLease(t *testing.T, path string, port int) (stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPortLeaseHolder$")
	cmd.Env = append(os.Environ(), "GYM_PORT_LEASE_FILE="+path, "GYM_PORT_LEASE_PORT="+strconv.Itoa(port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Cleanup(stop)
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "leased\n" {
		t.Fatalf("the other process did not lease port %d: %q %v", port, line, err)
	}
	return stop
}

// holderLeases keeps TestPortLeaseHolder's lease file open: collected, it
// would close, and its locks go with it.
var holderLeases *portLeases

// TestPortLeaseHolder is holdLease's other process.
func TestPortLeaseHolder(t *testing.T) {
	path := os.Getenv("GYM_PORT_LEASE_FILE")
	if path == "" {
		t.Skip("run by holdLease")
	}
	port, _ := strconv.Atoi(os.Getenv("GYM_PORT_LEASE_PORT"))
	holderLeases = &portLeases{path: path}
	if !leased(holderLeases, port) {
		os.Exit(3)
	}
	os.Stdout.WriteString("leased\n")
	select {} // until killed
}

// A lease held by another process holds until that process ends, however
// it ends.
func TestPortLeaseEndsWithItsProcess(t *testing.T) {
	requireLeases(t)
	path := filepath.Join(t.TempDir(), "ports.lock")
	stop := holdLease(t, path, 15000)
	l := &portLeases{path: path}
	if leased(l, 15000) {
		t.Fatal("took a port another process holds")
	}
	stop()
	if !leased(l, 15000) {
		t.Fatal("the lease outlived the process that held it")
	}
}

// Two gym processes resolving at once never hand out the same port: one
// leased by another process is passed over, as a bound one is.
func TestLoadPassesOverALeasedPort(t *testing.T) {
	requireLeases(t)
	port := twoFreePorts(t)
	path := filepath.Join(t.TempDir(), "ports.lock")
	holdLease(t, path, port)
	env := testEnv(t, nil)
	env.PortFree = (&portLeases{path: path}).free
	env.RandInt = func(int64) int64 { return 0 } // the leased port first, every draw
	overrides := []string{"+port_range_low=" + strconv.Itoa(port), "+port_range_high=" + strconv.Itoa(port+1), "+m.responses_api_models.x.entrypoint=app.py"}
	_, err := Load(context.Background(), env, Request{Overrides: overrides})
	if err == nil || !strings.Contains(err.Error(), "Unable to find an open port") {
		t.Fatalf("got %v, want no port found: the only one drawn is leased", err)
	}
	env.RandInt = func(n int64) int64 { return n - 1 }
	res, err := Load(context.Background(), env, Request{Overrides: overrides})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := intValue(res.Config.Get("m").Get("responses_api_models").Get("x").Get("port")); got != int64(port+1) {
		t.Fatalf("port = %v, want %d", got, port+1)
	}
}

// twoFreePorts is a port p such that p and p+1 can both be bound now.
func twoFreePorts(t *testing.T) int {
	for range 100 {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if l2, err := net.Listen("tcp", ":"+strconv.Itoa(p+1)); err == nil {
			l2.Close()
			return p
		}
	}
	t.Fatal("no two free ports in a row")
	return 0
}
