package server

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
)

// listenLocal listens on the abstract socket name, unless this process
// runs as the overflow uid, which no peer would trust.
func listenLocal(name string) (net.Listener, error) {
	if os.Getuid() == overflowUID {
		return nil, errors.ErrUnsupported
	}
	var lc net.ListenConfig
	return lc.Listen(context.Background(), "unix", name)
}

// dialLocal connects to the abstract socket name, and keeps the connection
// only when the process listening there runs as this user: anyone could
// have bound the name. It returns nil, for the caller to dial TCP, on any
// failure, and says whether it found the name unbound or bound by another
// user.
func dialLocal(ctx context.Context, name string) (c net.Conn, absent bool) {
	if os.Getuid() == overflowUID {
		return nil, true
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", name)
	if err != nil {
		return nil, errors.Is(err, syscall.ECONNREFUSED)
	}
	if !sameUser(c.(*net.UnixConn)) {
		c.Close()
		return nil, true
	}
	return c, false
}

// overflowUID is the kernel's default uid for one a user namespace does not
// map: processes of different users can all show as it, so it proves
// nothing about who is at the other end.
const overflowUID = 65534

// sameUser reports whether the process at the other end of c runs as this
// process's user (its credentials as of its connect or listen).
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
	return cred.Uid == uint32(os.Getuid()) && cred.Uid != overflowUID
}
