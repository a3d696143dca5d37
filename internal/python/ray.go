package python

import (
	"net"
	"strconv"
	"strings"
)

// RayHeadName is how the Ray head's lines are prefixed.
const RayHeadName = "ray_head"

// RayHeadArgv starts a run's one Ray head in the foreground from a venv
// that has the pinned ray[default], listening on loopback. `ray start
// --block` stops every Ray process it started (GCS, raylet, agents) when it
// gets SIGTERM, so ending it ends the cluster; the dashboard is off, so two
// runs on one machine do not fight over its fixed port.
func RayHeadArgv(v Venv, port int) []string {
	return []string{
		v.Bin("ray"), "start", "--head", "--block",
		"--node-ip-address=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--include-dashboard=false", "--disable-usage-stats",
		"--log-style=record", "--log-color=false",
	}
}

// RayHeadReady reports whether a line of `ray start` says the cluster is up.
func RayHeadReady(line string) bool { return strings.Contains(line, "Ray runtime started") }

// RayAddress is the GCS address children put in ray.init(address=...).
func RayAddress(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
