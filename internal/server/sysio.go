package server

import (
	"log/slog"
	"net"
)

// WithSysIO returns ln, listening on network, handing out its TCP and Unix
// connections reading and writing with raw system calls (withSysIO), as
// gym's servers accept them.
func WithSysIO(ln net.Listener, network string) net.Listener { return sysListener{ln, network} }

type sysListener struct {
	net.Listener
	network string
}

func (l sysListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return withSysIO(c, l.network), nil
}

// serveListener is what Serve accepts from, given its listener on "tcp":
// the local socket beside it, and every connection with raw system calls.
func serveListener(tcp net.Listener, logger *slog.Logger) net.Listener {
	return WithLocalSocket(WithSysIO(tcp, "tcp"), logger)
}
