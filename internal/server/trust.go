package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// The run token is the trust boundary between this machine and the
// network (DESIGN "Trust boundary"): the launcher generates one per run and
// puts it in every child's environment; servers of the run send it to each
// other in the header, and a server refuses a non-local client without it.
const (
	RunTokenEnv    = "GYM_RUN_TOKEN"
	RunTokenHeader = "X-Gym-Run-Token"
)

const (
	headServerKey = "head_server"
	// A miss re-reads the interfaces at most this often, so a flood of
	// remote clients costs no more than one interface listing per interval.
	interfaceRefresh = 5 * time.Second
	// A hit on a listing older than this re-reads it too, so an address
	// this machine gave up stops counting as local.
	interfaceMaxAge = time.Minute
)

// LocalClient reports whether r came from this machine: from a loopback
// address, or from one of this machine's own interface addresses, which is
// where a connection to the node's own IP comes from (NeMo Gym's
// use_absolute_ip puts such addresses in the config). X-Forwarded-For and
// the like are never consulted: anyone can send them.
func LocalClient(r *http.Request) bool {
	ip, ok := peerIP(r)
	return ok && (ip.IsLoopback() || machineAddrs.has(ip))
}

// InProcessRequest is a request handed straight to a handler of this
// process (an agent's self-call, metrics computed in process). It never
// crossed a network, so it comes from loopback as LocalClient reads it.
func InProcessRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	req.RemoteAddr = "127.0.0.1:0"
	return req, nil
}

// TokenValid reports whether r carries token in X-Gym-Run-Token. The
// comparison takes the same time wherever the two differ, and even for a
// different length, so timing tells a remote guesser nothing. An empty
// token validates nothing.
func TokenValid(r *http.Request, token string) bool {
	if token == "" {
		return false
	}
	got := sha256.Sum256([]byte(r.Header.Get(RunTokenHeader)))
	want := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// RequireRunToken serves h only to clients this machine trusts: local ones,
// and others that send the run's token. Anyone else gets 401 with a
// FastAPI-style {"detail": ...} body. GET and HEAD / stay open to all: a
// liveness answer carries no secret, and readiness probes and `gym env
// status` from other nodes need it. An empty token leaves h unguarded, so a
// server started outside gym works as it always has. Wrap applies the same
// rule with rt.RunToken; the launcher's head server, which serves the
// unresolved config, wraps its handler in this.
func RequireRunToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !trusted(r, token) {
			refuseUntrusted(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// trusted is RequireRunToken's rule. The token is checked before the
// interface list so that an authenticated remote client never takes the
// listing's lock.
func trusted(r *http.Request, token string) bool {
	if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		return true
	}
	ip, ok := peerIP(r)
	if ok && ip.IsLoopback() {
		return true
	}
	return TokenValid(r, token) || (ok && machineAddrs.has(ip))
}

var refusalBody = []byte(`{"detail":"Not authenticated: this gym run's servers answer other machines only with the run's token in the ` + RunTokenHeader + ` header (gym gives its servers the token in ` + RunTokenEnv + `)"}`)

func refuseUntrusted(w http.ResponseWriter) {
	writeJSON(w, http.StatusUnauthorized, refusalBody)
}

func peerIP(r *http.Request) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap().WithZone(""), true
}

// machineAddrs caches this machine's interface addresses. Like the
// registry it is package state, because the interfaces are the process's
// machine's, whoever asks.
var machineAddrs = &interfaceAddrs{list: net.InterfaceAddrs, now: time.Now}

// interfaceAddrs is a listing of interface addresses, re-read on a miss at
// most every interfaceRefresh and on a hit once it is interfaceMaxAge old.
// Hits on a fresh listing take no lock.
type interfaceAddrs struct {
	list func() ([]net.Addr, error)
	now  func() time.Time

	snap    atomic.Pointer[addrSnapshot]
	mu      sync.Mutex
	tried   time.Time // the last listing attempt; guarded by mu
	hasRead bool      // whether there was one; guarded by mu
}

type addrSnapshot struct {
	set map[netip.Addr]bool
	at  time.Time
}

func (c *interfaceAddrs) has(ip netip.Addr) bool {
	if s := c.snap.Load(); s != nil && s.set[ip] && c.now().Sub(s.at) < interfaceMaxAge {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !c.hasRead || now.Sub(c.tried) >= interfaceRefresh {
		c.tried, c.hasRead = now, true
		if addrs, err := c.list(); err == nil {
			set := make(map[netip.Addr]bool, len(addrs))
			for _, a := range addrs {
				if ip, ok := addrIP(a); ok {
					set[ip] = true
				}
			}
			c.snap.Store(&addrSnapshot{set: set, at: now})
		}
	}
	s := c.snap.Load()
	return s != nil && s.set[ip]
}

func addrIP(a net.Addr) (netip.Addr, bool) {
	var ip net.IP
	switch a := a.(type) {
	case *net.IPNet:
		ip = a.IP
	case *net.IPAddr:
		ip = a.IP
	default:
		return netip.Addr{}, false
	}
	addr, ok := netip.AddrFromSlice(ip)
	return addr.Unmap(), ok
}

// RunServers lists host:port of every server of the run a config
// describes, the head server included: the only destinations a Client
// sends the run token to. Addresses are read as ServerURL reads them
// (host and port alone, resolved with lookupEnv) and normalized as
// ClientOptions.RunServers compares them. Instances without an assigned
// port, or whose address does not resolve, are left out; the list is
// sorted.
func RunServers(global *tree.Node, lookupEnv func(string) (string, bool)) []string {
	var out []string
	add := func(host string, port int) {
		if host != "" && port > 0 {
			out = append(out, canonicalHostPort(host, strconv.Itoa(port)))
		}
	}
	for _, e := range global.Entries {
		if e.Key == headServerKey || config.IsReserved(e.Key) || e.Value.Kind != tree.Map {
			continue
		}
		section, _, _, err := config.InstanceSection(addressOnly(global, e.Key), e.Key, lookupEnv)
		if err != nil {
			continue
		}
		if host, port, err := hostPort(section, e.Key); err == nil {
			add(host, port)
		}
	}
	if hs := global.Get(headServerKey); hs != nil && hs.Kind == tree.Map {
		host, herr := config.ResolveGlobal(global, headServerKey+"."+hostKey, lookupEnv)
		port, perr := config.ResolveGlobal(global, headServerKey+"."+portKey, lookupEnv)
		if herr == nil && perr == nil && host != nil && host.Kind == tree.String {
			if p, ok := portNumber(port); ok {
				add(host.Str, p)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// canonicalHostPort spells an address one way: host names in lower case,
// IP addresses in their canonical form. Names are not resolved, so
// "localhost" and "127.0.0.1" stay different destinations.
func canonicalHostPort(host, port string) string {
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	return net.JoinHostPort(host, port)
}

// urlHostPort is u's destination spelled as canonicalHostPort spells it.
func urlHostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return canonicalHostPort(u.Hostname(), port)
}
