package submit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSSH puts on PATH an ssh that runs the remote command line on this
// machine with sh, as sshd hands it to the login shell, and keeps a
// master connection as a process holding its control socket.
func fakeSSH(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	script := `#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in
    -o) case $2 in ControlPath=*) sock=${2#ControlPath=};; esac; shift 2;;
    -N) master=1; shift;;
    --) shift; break;;
    *) dest=$1; shift;;
  esac
done
if [ "$dest" = refused ]; then echo "refused: Permission denied (publickey)." >&2; exit 255; fi
if [ -n "$master" ]; then : > "$sock"; exec sleep 600; fi
exec sh -c "$1"
`
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// Over SSH every word of a command arrives as it was, an environment value
// arrives on stdin, never on a command line, and files are staged whole.
func TestSSHHost(t *testing.T) {
	fakeSSH(t)
	ctx := context.Background()
	h, err := OpenHost(ctx, "login")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	out, err := h.Run(ctx, nil, nil, "printf", "[%s]", "two words", "it's", "$HOME", "")
	if err != nil || out != "[two words][it's][$HOME][]" {
		t.Errorf("words: %q, %v", out, err)
	}
	out, err = h.Run(ctx, nil, []string{"SECRET=a 'quoted' $value", "EMPTY="}, "sh", "-c", `printf '%s|%s' "$SECRET" "$EMPTY"`)
	if err != nil || out != "a 'quoted' $value|" {
		t.Errorf("env: %q, %v", out, err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	src := filepath.Join(t.TempDir(), "gym")
	os.WriteFile(src, []byte("binary"), 0o755)
	if err := h.Put(ctx, dir, stagedFiles(src, []Job{{Dir: filepath.Join(dir, "b"), Script: "job"}}, dir)); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "b", "job.sh")); err != nil || string(data) != "job" {
		t.Errorf("job.sh: %q, %v", data, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "bin", "gym")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("bin/gym: %v, %v", st, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "b", "logs")); err != nil || !st.IsDir() {
		t.Errorf("logs/: %v", err)
	}
	if _, err := h.Run(ctx, nil, nil, "sh", "-c", "echo no such partition >&2; exit 1"); err == nil || !strings.Contains(err.Error(), "on login: exit status 1: no such partition") {
		t.Errorf("a failing command: %v", err)
	}
	master := h.(*sshHost).master
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if master.ProcessState == nil {
		t.Error("the master connection outlived Close")
	}
}

// A host SSH cannot log in to is a clear error at once.
func TestSSHHostRefused(t *testing.T) {
	fakeSSH(t)
	_, err := OpenHost(context.Background(), "refused")
	if err == nil || !strings.Contains(err.Error(), "cannot reach refused over SSH") || !strings.Contains(err.Error(), "Permission denied (publickey)") {
		t.Fatalf("err = %v", err)
	}
}

// A login node whose platform could not run the staged binary is refused
// before anything is staged.
func TestSSHHostOfAnotherPlatform(t *testing.T) {
	fakeSSH(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "uname"), []byte("#!/bin/sh\necho Linux riscv32\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	h, err := OpenHost(context.Background(), "login")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := checkPlatform(context.Background(), h); err == nil || !strings.Contains(err.Error(), "login runs Linux riscv32, but this gym is built for linux/") {
		t.Errorf("err = %v", err)
	}
	if err := checkPlatform(context.Background(), localHost{}); err != nil {
		t.Errorf("this machine: %v", err)
	}
}
