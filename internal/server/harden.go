package server

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// A real client sends its request head at once, in one packet; ten
	// seconds forgive a stalled network or a paused peer, while a
	// connection that dribbles its head (slowloris) is dropped after ten
	// seconds instead of held for ever.
	headerTimeout = 10 * time.Second
	// Four times the 16 KiB h11 lets into NeMo Gym's uvicorn servers, so
	// every request head a Python server accepts is accepted, with room for
	// long cookies and bearer tokens; a sixteenth of net/http's 1 MiB
	// default, which at tens of thousands of connections would let request
	// heads alone take gigabytes.
	maxHeaderBytes = 64 << 10
	// Without getrlimit's answer, assume the usual soft limit.
	assumedFileLimit = 1024
	// Far above any real limit (Linux caps it at fs.nr_open, 2^20 by
	// default); it only keeps an "unlimited" answer from overflowing.
	fileLimitCeiling = 1 << 24
	// Rejections under way at once. Each holds a descriptor for at most
	// rejectLinger; beyond this a flood is cut off without an answer.
	maxRejecting = 64
	// How long a rejected connection may take to send its request and read
	// the 503 before it is closed. Closing with the client's request still
	// unread would send a reset, which can destroy the 503 before the
	// client reads it.
	rejectLinger = 500 * time.Millisecond
	// Rejections are logged at most this often: an overload must show in
	// the log without a flood of connections flooding it too.
	rejectLogEvery = 10 * time.Second
)

// Harden bounds what clients can make srv hold, and returns the listener
// srv must serve instead of ln (ln must hand out plain connections, TCP or
// a local socket's, not TLS: rejections are written as HTTP/1.1 on the raw
// connection). Call it before serving (srv.Serve, or gym's loop over srv);
// the launcher's head server and every `gym serve` server use it so that
// no client, idle or hostile, can exhaust the process's descriptors.
//
// Where srv leaves them zero it sets ReadHeaderTimeout (10 s: a connection
// must deliver its whole request head in that time, however it trickles),
// IdleTimeout (30 s, uvicorn's keep-alive in NeMo Gym) and MaxHeaderBytes
// (64 KiB, four times what NeMo Gym's uvicorn accepts). Bodies and responses
// stay unbounded, since an agent's /run may take hours.
//
// The returned listener holds at most maxConns connections open. One more
// is answered, as soon as it sends its request, with `503 Service
// Unavailable`, `Retry-After: 1` and `Connection: close`, and closed, so a
// client sees an overload it can retry instead of a connection that hangs;
// srv.ErrorLog (or the log package's default) says so, every ten seconds
// at most. maxConns <= 0 takes three quarters of the current open-file
// limit, leaving the rest for upstream connections, logs and files.
func Harden(srv *http.Server, ln net.Listener, maxConns int) net.Listener {
	if srv.ReadHeaderTimeout == 0 {
		srv.ReadHeaderTimeout = headerTimeout
	}
	if srv.IdleTimeout == 0 {
		srv.IdleTimeout = serverKeepAlive
	}
	if srv.MaxHeaderBytes == 0 {
		srv.MaxHeaderBytes = maxHeaderBytes
	}
	if maxConns <= 0 {
		files, _ := openFileLimit() // 0 when unknown, which connLimit reads as the usual limit
		maxConns = connLimit(files)
	}
	body := `{"detail":"Service Unavailable: too many open connections (` + strconv.Itoa(maxConns) + `); retry shortly"}`
	reply := "HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Retry-After: 1\r\n" +
		"Connection: close\r\n\r\n" + body
	logf := log.Printf
	if srv.ErrorLog != nil {
		logf = srv.ErrorLog.Printf
	}
	return &limitListener{Listener: ln, max: int64(maxConns), reply: []byte(reply), rejecting: make(chan struct{}, maxRejecting), logf: logf, now: time.Now}
}

// connLimit is the connection cap for a process allowed files descriptors:
// three quarters of them. The quarter kept back holds the client's upstream
// pools (1024 connections per host by default), log and capture files, the
// listener itself and rejections under way.
func connLimit(files uint64) int {
	if files == 0 {
		files = assumedFileLimit
	}
	files = min(files, fileLimitCeiling)
	return int(files - files/4)
}

// limitListener counts the connections it has handed out that are still
// open, and turns away those beyond max.
type limitListener struct {
	net.Listener
	max       int64
	open      atomic.Int64
	reply     []byte
	rejecting chan struct{}
	logf      func(format string, args ...any)
	now       func() time.Time
	rejected  atomic.Int64
	loggedAt  atomic.Int64 // unix nanoseconds of the last rejection log; 0: none yet
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.reject(c)
	}
}

// reject answers c with the 503 away from the accept loop, which must keep
// turning connections away at the rate they arrive.
func (l *limitListener) reject(c net.Conn) {
	n := l.rejected.Add(1)
	now := l.now().UnixNano()
	if last := l.loggedAt.Load(); (last == 0 || now-last >= int64(rejectLogEvery)) && l.loggedAt.CompareAndSwap(last, now) {
		l.logf("turned a connection away with 503 (%d so far): the cap of %d open connections is reached", n, l.max)
	}
	select {
	case l.rejecting <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.rejecting }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(rejectLinger))
		// Answer only once the request has begun: an HTTP client may take
		// bytes that arrive before it has written anything for a broken
		// connection, not for an answer.
		var first [512]byte
		if n, _ := c.Read(first[:]); n == 0 {
			return
		}
		if _, err := c.Write(l.reply); err != nil {
			return
		}
		// Half-close, then drain what the client sent until it closes too:
		// the FIN tells it the answer is complete, and nothing unread is
		// left to turn the close into a reset.
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.Copy(io.Discard, c)
	}()
}

// limitedConn gives its slot back when closed, once, however often the
// server closes it. The slot is freed before the descriptor so that a
// client that has seen the close can count on the slot being free.
type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// CloseWrite keeps net/http's half-close before closing a connection, which
// it only does on connections that offer it.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
