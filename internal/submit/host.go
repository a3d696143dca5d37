package submit

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Host is where Slurm's client commands run and the run directory lives:
// this machine, or a login node reached over SSH.
type Host interface {
	// Name is the SSH destination, "" for this machine.
	Name() string
	// Run runs argv there with stdin and the extra environment env
	// (NAME=value), and returns its standard output; a failure's error
	// carries its standard error (see errText).
	Run(ctx context.Context, stdin io.Reader, env []string, argv ...string) (string, error)
	// Put writes files under dir, creating what is missing.
	Put(ctx context.Context, dir string, files []File) error
	Close() error
}

// File is one file staged into a run directory: a directory when Mode
// says so, else its content from Data, or copied from Source when Data is
// nil.
type File struct {
	Path   string // relative to the run directory
	Mode   os.FileMode
	Data   []byte
	Source string
}

// CommandError is a command that failed on a host, with what it printed
// on stderr.
type CommandError struct {
	Host   string
	Cmd    string
	Stderr string
	Err    error
}

func (e *CommandError) Error() string {
	where := ""
	if e.Host != "" {
		where = " on " + e.Host
	}
	msg := fmt.Sprintf("%s%s: %v", e.Cmd, where, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// OpenHost connects to the host a submission names: this machine for "",
// otherwise the SSH destination, through one master connection that every
// later command reuses.
func OpenHost(ctx context.Context, hostname string) (Host, error) {
	if hostname == "" {
		return localHost{}, nil
	}
	return dialSSH(ctx, hostname)
}

type localHost struct{}

func (localHost) Name() string { return "" }

func (localHost) Run(ctx context.Context, stdin io.Reader, env []string, argv ...string) (string, error) {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return "", fmt.Errorf("%s is not on PATH: gym eval submit runs Slurm's own commands, so run it where Slurm's client tools are installed (a login node), or name that node in compute.<name>.hostname to reach it over SSH: %w", argv[0], err)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = stdin
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	return runCommand(cmd, "", strings.Join(argv, " "))
}

func (localHost) Put(_ context.Context, dir string, files []File) error {
	for _, f := range files {
		path := filepath.Join(dir, f.Path)
		if f.Mode.IsDir() {
			if err := os.MkdirAll(path, f.Mode.Perm()); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := writeFile(path, f); err != nil {
			return fmt.Errorf("staging %s: %w", path, err)
		}
	}
	return nil
}

func (localHost) Close() error { return nil }

func writeFile(path string, f File) error {
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, f.Mode)
	if err != nil {
		return err
	}
	if err := copyContent(dst, f); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func copyContent(w io.Writer, f File) error {
	if f.Data != nil {
		_, err := w.Write(f.Data)
		return err
	}
	src, err := os.Open(f.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(w, src)
	return err
}

func runCommand(cmd *exec.Cmd, host, what string) (string, error) {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), &CommandError{Host: host, Cmd: what, Stderr: stderr.String(), Err: err}
	}
	return string(out), nil
}

// sshHost runs every command through one SSH master connection, a child
// of gym that dies with it, so that no connection outlives the command.
type sshHost struct {
	dest   string
	dir    string // holds the control socket, private to this user
	socket string
	master *exec.Cmd
	done   chan struct{}
	stderr strings.Builder
}

// sshOptions never prompt: a submission from a CI script must fail, not
// wait for a password.
var sshOptions = []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=20"}

const sshMasterWait = 30 * time.Second

func dialSSH(ctx context.Context, dest string) (*sshHost, error) {
	if strings.HasPrefix(dest, "-") {
		return nil, &ConfigError{Msg: fmt.Sprintf("compute hostname %q is not an SSH destination", dest)}
	}
	if _, err := exec.LookPath("ssh"); err != nil {
		return nil, fmt.Errorf("compute hostname %q needs ssh to reach it, and ssh is not on PATH: %w", dest, err)
	}
	dir, err := os.MkdirTemp("", "gym-ssh-")
	if err != nil {
		return nil, err
	}
	h := &sshHost{dest: dest, dir: dir, socket: filepath.Join(dir, "control"), done: make(chan struct{})}
	args := append(append([]string{}, sshOptions...), "-o", "ControlMaster=yes", "-o", "ControlPath="+h.socket, "-N", dest)
	h.master = exec.Command("ssh", args...)
	h.master.Stderr = &h.stderr
	h.master.SysProcAttr = masterAttr()
	if err := h.master.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { h.master.Wait(); close(h.done) }()
	deadline := time.NewTimer(sshMasterWait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(h.socket); err == nil {
			return h, nil
		}
		select {
		case <-h.done:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("cannot reach %s over SSH (ssh exited with %v): %s", dest, h.master.ProcessState, strings.TrimSpace(h.stderr.String()))
		case <-deadline.C:
			h.Close()
			return nil, fmt.Errorf("cannot reach %s over SSH: no connection within %s", dest, sshMasterWait)
		case <-ctx.Done():
			h.Close()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

func (h *sshHost) Name() string { return h.dest }

// Run sends the command line quoted for a POSIX shell, which is what the
// remote side runs it with; with env, the values travel on stdin inside
// the encrypted channel, never on a command line or in a file.
func (h *sshHost) Run(ctx context.Context, stdin io.Reader, env []string, argv ...string) (string, error) {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = shellQuote(a)
	}
	line := strings.Join(words, " ")
	remote := line
	if len(env) > 0 {
		if stdin != nil {
			return "", errors.New("submit: a remote command takes an environment or a standard input, not both")
		}
		var script strings.Builder
		for _, kv := range env {
			name, value, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&script, "export %s=%s\n", name, shellQuote(value))
		}
		script.WriteString("exec " + line + "\n")
		stdin = strings.NewReader(script.String())
		remote = "sh -s"
	}
	args := append(append([]string{}, sshOptions...), "-o", "ControlMaster=no", "-o", "ControlPath="+h.socket, h.dest, "--", remote)
	cmd := exec.CommandContext(ctx, "ssh", args...)
	cmd.Stdin = stdin
	return runCommand(cmd, h.dest, strings.Join(argv, " "))
}

// Put streams the files as one tar archive into tar on the remote side,
// which every login node has.
func (h *sshHost) Put(ctx context.Context, dir string, files []File) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, files)) }()
	_, err := h.Run(ctx, pr, nil, "sh", "-c", `mkdir -p "$1" && tar -x -f - -C "$1"`, "sh", dir)
	pr.Close()
	if err != nil {
		return fmt.Errorf("staging %s on %s: %w", dir, h.dest, err)
	}
	return nil
}

func writeTar(w io.Writer, files []File) error {
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	for _, f := range files {
		d := filepath.Dir(f.Path)
		if f.Mode.IsDir() {
			d = f.Path
		}
		for ; d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: time.Now()}); err != nil {
			return err
		}
	}
	for _, f := range files {
		if f.Mode.IsDir() {
			continue
		}
		size := int64(len(f.Data))
		if f.Data == nil {
			st, err := os.Stat(f.Source)
			if err != nil {
				return err
			}
			size = st.Size()
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: int64(f.Mode.Perm()), Size: size, ModTime: time.Now()}); err != nil {
			return err
		}
		if err := copyContent(tw, f); err != nil {
			return err
		}
	}
	return tw.Close()
}

func (h *sshHost) Close() error {
	if h.master.Process != nil {
		h.master.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.done:
		case <-time.After(5 * time.Second):
			h.master.Process.Kill()
			<-h.done
		}
	}
	return os.RemoveAll(h.dir)
}

// checkPlatform refuses a host whose nodes could not run the staged gym
// binary.
func checkPlatform(ctx context.Context, h Host) error {
	if h.Name() == "" {
		return nil
	}
	out, err := h.Run(ctx, nil, nil, "uname", "-sm")
	if err != nil {
		return err
	}
	want := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}[runtime.GOARCH]
	if got := strings.Fields(out); len(got) != 2 || got[0] != "Linux" || got[1] != want {
		return fmt.Errorf("%s runs %s, but this gym is built for %s/%s and the jobs run the gym binary that submits them; submit with a gym built for the cluster (GOOS=linux GOARCH=... go build ./cmd/gym)", h.Name(), strings.TrimSpace(out), runtime.GOOS, runtime.GOARCH)
	}
	return nil
}
