package server

import (
	"log/slog"
	"net"
)

// sysListener hands out its TCP and Unix connections reading and writing
// with raw system calls (withSysIO); network is what it listens on.
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

// ServeListener is what gym's servers accept from, given their listener
// on "tcp": the local socket beside it (WithLocalSocket), and every
// connection with raw system calls. Serve listens this way; bench/floor's
// servers may too.
func ServeListener(tcp net.Listener, logger *slog.Logger) net.Listener {
	return WithLocalSocket(sysListener{tcp, "tcp"}, logger)
}
