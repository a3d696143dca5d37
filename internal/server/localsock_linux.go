package server

import (
	"context"
	"net"
	"os"
	"syscall"
)

func listenLocal(name string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(context.Background(), "unix", name)
}

// dialLocal connects to the abstract socket name, and keeps the connection
// only when the process listening there runs as this user: anyone could
// have bound the name. Any failure is nil, for the caller to dial TCP.
func dialLocal(ctx context.Context, name string) net.Conn {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", name)
	if err != nil {
		return nil
	}
	if !sameUser(c.(*net.UnixConn)) {
		c.Close()
		return nil
	}
	return c
}

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
