package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/python"
)

// versionOptions are the inputs of `gym --version`.
type versionOptions struct {
	IO      *iostreams.IOStreams
	ws      *workspace
	version string
	json    bool
}

// versionReport is NeMo Gym's `gym --version --json` object with gym's own
// facts: the system block keeps NeMo Gym's keys; the Python packages it
// lists give way to the tools gym runs Python servers with.
type versionReport struct {
	Gym               string             `json:"gym"`
	NemoGymCompatible string             `json:"nemo_gym_compatible"`
	Go                string             `json:"go"`
	Executable        string             `json:"executable"`
	InstallationPath  string             `json:"installation_path"`
	Dependencies      map[string]*string `json:"dependencies"`
	System            systemReport       `json:"system"`
}

type systemReport struct {
	OS           string  `json:"os"`
	Platform     string  `json:"platform"`
	Architecture string  `json:"architecture"`
	Processor    string  `json:"processor"`
	CPUs         int     `json:"cpus"`
	MemoryGB     float64 `json:"memory_gb"`
}

func runVersion(ctx context.Context, opts *versionOptions) error {
	r := gatherVersion(ctx, opts.ws, opts.version)
	if opts.json {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(opts.IO.Out, "%s\n", b)
		return err
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "gym %s (NeMo Gym %s compatible)\n", r.Gym, r.NemoGymCompatible)
	fmt.Fprintf(w, "Go %s (%s)\n", r.Go, r.Executable)
	fmt.Fprintf(w, "Installation: %s\n\nKey Dependencies:\n", r.InstallationPath)
	for _, name := range []string{"python3", "uv"} {
		v := "not found on PATH (needed only for Python servers)"
		if found := r.Dependencies[name]; found != nil {
			v = *found
		}
		fmt.Fprintf(w, "  %s: %s\n", name, v)
	}
	s := r.System
	_, err := fmt.Fprintf(w, "\nSystem:\n  OS: %s\n  Platform: %s\n  Architecture: %s\n  Processor: %s\n  CPUs: %d\n  Memory: %g GB\n",
		s.OS, s.Platform, s.Architecture, s.Processor, s.CPUs, s.MemoryGB)
	return err
}

func gatherVersion(ctx context.Context, ws *workspace, version string) versionReport {
	exe, _ := ws.Executable()
	install, err := ws.installRoot()
	if err != nil {
		install = "unavailable: " + err.Error()
	}
	release, machine := uname()
	return versionReport{
		Gym:               version,
		NemoGymCompatible: python.NemoGymVersion,
		Go:                runtime.Version(),
		Executable:        exe,
		InstallationPath:  install,
		Dependencies: map[string]*string{
			"python3": toolVersion(ctx, ws, "python3", "--version"),
			"uv":      toolVersion(ctx, ws, "uv", "--version"),
		},
		System: systemReport{
			OS:           strings.TrimSpace(capitalize(runtime.GOOS) + " " + release),
			Platform:     runtime.GOOS + "-" + runtime.GOARCH,
			Architecture: machine,
			Processor:    cpuModel(),
			CPUs:         runtime.NumCPU(),
			MemoryGB:     memoryGB(),
		},
	}
}

// toolVersion is the version a tool on PATH reports ("Python 3.11.2" →
// "3.11.2 (/usr/bin/python3)"), or nil when it is not there or does not
// answer within a second.
func toolVersion(ctx context.Context, ws *workspace, tool string, args ...string) *string {
	path, err := ws.LookPath(tool)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).Output()
	if err != nil {
		return nil
	}
	fields := strings.Fields(string(out))
	v := path
	if len(fields) >= 2 {
		v = fields[1] + " (" + path + ")"
	}
	return &v
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// uname is the kernel release and machine name as platform.release() and
// platform.machine() give them; empty off Linux.
func uname() (release, machine string) {
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return strings.TrimSpace(string(b))
	}
	release = read("/proc/sys/kernel/osrelease")
	machine = map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686"}[runtime.GOARCH]
	if machine == "" {
		machine = runtime.GOARCH
	}
	return release, machine
}

// cpuModel is the processor's model name, "unknown" when the system does not say.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// memoryGB is the machine's total memory in GiB rounded to two places, as
// NeMo Gym reports psutil's total; 0 when unknown.
func memoryGB() float64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0
			}
			gb := kb / (1024 * 1024)
			return float64(int64(gb*100+0.5)) / 100
		}
	}
	return 0
}
