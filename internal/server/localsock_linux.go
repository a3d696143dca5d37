package server

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
)

// abstractSockets is whether this platform has abstract Unix sockets.
const abstractSockets = true

func listenLocal(name string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(context.Background(), "unix", name)
}

// dialLocal connects to the abstract socket name, and keeps the connection
// only when the process listening there runs as this user: anyone could
// have bound the name. It returns nil, for the caller to dial TCP, on any
// failure, and says whether it found the name unbound or bound by another
// user.
func dialLocal(ctx context.Context, name string) (c *net.UnixConn, absent bool) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", name)
	if err != nil {
		return nil, errors.Is(err, syscall.ECONNREFUSED)
	}
	if c = nc.(*net.UnixConn); !sameUser(c) {
		c.Close()
		return nil, true
	}
	return c, false
}

// sameUser reports whether the process at the other end of c runs as this
// process's user (its credentials as of its connect or listen). Local
// sockets are off for the overflow uid, so a match is never it.
func sameUser(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return false
	}
	return cred.Uid == uint32(os.Getuid())
}
