//go:build !linux

package server

import (
	"context"
	"errors"
	"net"
)

// Abstract Unix sockets are Linux's: elsewhere servers listen on TCP only.
func listenLocal(string) (net.Listener, error) { return nil, errors.ErrUnsupported }

func dialLocal(context.Context, string) (net.Conn, bool) { return nil, true }

func sameUser(*net.UnixConn) bool { return false }
