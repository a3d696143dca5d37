//go:build !linux

package server

import (
	"context"
	"errors"
	"net"
)

// Abstract Unix sockets are Linux's: elsewhere local sockets are off
// (localSocketsOff), so these are never called.
const abstractSockets = false

func listenLocal(string) (net.Listener, error) { return nil, errors.ErrUnsupported }

func dialLocal(context.Context, string) (*net.UnixConn, bool) { return nil, true }

func sameUser(*net.UnixConn) bool { return false }
