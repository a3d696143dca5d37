package python

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// RayHeadName is how the Ray head's lines are prefixed.
const RayHeadName = "ray_head"

// RayHeadArgv starts a run's one Ray head in the foreground from a venv
// that has the pinned ray[default]. `ray start --block` stops every Ray
// process it started (GCS, raylet, agents) when it gets SIGTERM, so ending
// it ends the cluster. The node address is Ray's own choice, as with NeMo
// Gym's local ray.init(); the dashboard is off, so two runs on one machine
// do not fight over its fixed port. tempDir is the run's own: `ray start`
// records its cluster as the machine's current one in <temp dir>/
// ray_current_cluster and leaves that file behind, so in the shared
// /tmp/ray any later ray.init() (NeMo Gym's own env start among them)
// would try to join the dead cluster.
//
// Ray's own ports stay out of the range the run's servers are given
// theirs from (ports): its workers bind in 10002-19999 and its client
// server on 10001 by default, inside NeMo Gym's default 10001-20000, so a
// Ray worker could take the port of a server not yet started. The
// workers get rayWorkerPorts' span and the client server clientPort.
func RayHeadArgv(v Venv, port, clientPort int, tempDir string, ports PortRange) []string {
	argv := []string{
		v.Bin("ray"), "start", "--head", "--block", "--port=" + strconv.Itoa(port), "--temp-dir=" + tempDir,
		"--include-dashboard=false", "--disable-usage-stats",
		"--log-style=record", "--log-color=false",
		"--ray-client-server-port=" + strconv.Itoa(clientPort),
	}
	if workers, ok := rayWorkerPorts(ports); ok {
		argv = append(argv, "--min-worker-port="+strconv.Itoa(workers.Low), "--max-worker-port="+strconv.Itoa(workers.High))
	}
	return argv
}

// PortRange is a span of ports, both ends included.
type PortRange struct{ Low, High int }

// Ray's worker span is as wide as its default (10002-19999) where it fits
// and at least minRayWorkerPorts wide, below the kernel's ephemeral ports
// (from 32768 on Linux), where outgoing connections and Ray's other,
// random ports come from.
const (
	rayWorkerSpan     = 9998
	minRayWorkerPorts = 1000
	ephemeralLow      = 32768
	privilegedHigh    = 1023
)

// rayWorkerPorts is the span Ray's workers bind in: just above the
// servers' range, or else just below it; false when neither has room
// (Ray's default is then left alone).
func rayWorkerPorts(servers PortRange) (PortRange, bool) {
	above := PortRange{servers.High + 1, min(servers.High+rayWorkerSpan, ephemeralLow-1)}
	if above.High-above.Low+1 >= minRayWorkerPorts {
		return above, true
	}
	below := PortRange{max(servers.Low-rayWorkerSpan, privilegedHigh+1), min(servers.Low-1, ephemeralLow-1)}
	if below.High-below.Low+1 >= minRayWorkerPorts {
		return below, true
	}
	return PortRange{}, false
}

// RayHeadEnv is what the Ray head runs with beyond the venv: a cluster
// private to one run has nothing to drain on shutdown, so it stops at once
// rather than after Ray's 30 s drain (unless the user set the drain).
func RayHeadEnv(environ []string) []string {
	env := append([]string(nil), environ...)
	for _, kv := range environ {
		if strings.HasPrefix(kv, "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=") {
			return env
		}
	}
	return append(env, "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0")
}

// RayAuthEnv is what the Ray head and every server of the run get so that
// only they can use the cluster: Ray's token authentication with a token
// made for this run (nemo-gym's local ray.init() turns token auth on too).
// A user's own RAY_AUTH_MODE in environ is left to rule, and nil returned.
func RayAuthEnv(environ []string) ([]string, error) {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "RAY_AUTH_MODE=") {
			return nil, nil
		}
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	return []string{"RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN=" + hex.EncodeToString(token)}, nil
}

// rayNodeIPLine is where `ray start` says which address the node took
// (its own choice: the machine's address, or loopback in Ray's
// single-machine mode).
var rayNodeIPLine = regexp.MustCompile(`Local node IP: (\S+)`)

// RayHead follows `ray start`'s output until the cluster is up.
type RayHead struct {
	Port   int
	nodeIP string
}

// Watch reads one line of `ray start` and returns the GCS address children
// pass to ray.init(address=...) once the line says the cluster is up.
func (r *RayHead) Watch(line string) (string, bool) {
	if m := rayNodeIPLine.FindStringSubmatch(line); m != nil {
		r.nodeIP = m[1]
	}
	if r.nodeIP == "" || !strings.Contains(line, "Ray runtime started") {
		return "", false
	}
	return net.JoinHostPort(r.nodeIP, strconv.Itoa(r.Port)), true
}
