package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// free is whether a port can be handed to a server: no other gym process
// of this user has it on lease, and a TCP bind on all interfaces succeeds,
// as upstream checks. NeMo Gym's bind check alone leaves a race: two
// processes resolving their configs at once can both find a port free and
// give it to two servers, and the second to start fails to bind. A port
// found free stays leased to this process until it exits; the servers it
// starts bind it meanwhile, and the bind check covers them after.
func (l *portLeases) free(port int) bool {
	fresh, ok := l.take(port)
	if !ok {
		return false
	}
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		if fresh {
			l.release(port)
		}
		return false
	}
	ln.Close()
	return true
}

// sharedLeases is the user's lease file, in /tmp rather than $TMPDIR: a
// cluster often gives each job a TMPDIR of its own, and the jobs on a node
// share its ports.
var sharedLeases = &portLeases{path: filepath.Join("/tmp", "gym-"+strconv.Itoa(os.Getuid())+"-ports.lock")}

// portLeases leases ports through locks on one byte each of a file every
// gym process of the user opens: a lock belongs to the open file (not to
// the process, as a plain POSIX lock would), and the kernel drops it when
// the process ends, however it ends.
type portLeases struct {
	path string
	once sync.Once
	f    *os.File // nil when the file cannot be opened: bind checks only
	mu   sync.Mutex
	held map[int]bool // the ports this process leased
}

func (l *portLeases) file() *os.File {
	l.once.Do(func() {
		if f, err := openLeaseFile(l.path); err == nil {
			l.f = f
		}
	})
	return l.f
}

// take leases port to this process: ok is false when another holds it,
// fresh whether this call took it (an earlier resolution in this process
// may hold it already). Without the lease file (or on a kernel without open
// file locks) every port can be taken, and the bind check is all there is, as
// in NeMo Gym.
func (l *portLeases) take(port int) (fresh, ok bool) {
	f := l.file()
	if f == nil {
		return false, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[port] {
		return false, true
	}
	switch err := lockByte(f, int64(port)); {
	case err == errLeased:
		return false, false
	case err != nil:
		return false, true
	}
	if l.held == nil {
		l.held = map[int]bool{}
	}
	l.held[port] = true
	return true, true
}

var errLeased = errors.New("the port is leased to another gym process")

// release gives back a port this process leased and will not use.
func (l *portLeases) release(port int) {
	f := l.file()
	if f == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[port] {
		unlockByte(f, int64(port))
		delete(l.held, port)
	}
}
