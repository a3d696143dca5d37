package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Starlette SessionMiddleware's defaults (spec §3.2).
const sessionMaxAge = 14 * 24 * 60 * 60

// sessionCookie issues and checks session tokens `<uuid>.<mac>`. Like
// NeMo Gym, the signing key is the cookie name itself: the signature only
// tells a cookie this server issued from a tampered or foreign one, which
// then starts a new session. Python servers never read a Go server's
// cookie, so the value format is ours (spec §3.2 "Go port").
type sessionCookie struct {
	name  string
	attrs string
	macs  sync.Pool // keyed HMAC states, reset and reused
}

func newSessionCookie(name string) *sessionCookie {
	c := &sessionCookie{
		name:  name,
		attrs: "; Path=/; Max-Age=" + strconv.Itoa(sessionMaxAge) + "; HttpOnly; SameSite=Lax",
	}
	c.macs.New = func() any { return hmac.New(sha256.New, []byte(name)) }
	return c
}

// session returns the request's session id and the token that carries it,
// minting both when no cookie of ours verifies.
func (c *sessionCookie) session(r *http.Request) (id, token string) {
	for _, ck := range r.CookiesNamed(c.name) {
		if id, ok := c.verify(ck.Value); ok {
			return id, ck.Value
		}
	}
	id = newUUID()
	return id, id + "." + c.sign(id)
}

func (c *sessionCookie) header(token string) string {
	return c.name + "=" + token + c.attrs
}

func (c *sessionCookie) sign(id string) string {
	var sum [sha256.Size]byte
	c.mac(id, sum[:0])
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (c *sessionCookie) verify(token string) (string, bool) {
	id, sig, ok := strings.Cut(token, ".")
	if !ok || id == "" || base64.RawURLEncoding.DecodedLen(len(sig)) != sha256.Size {
		return "", false
	}
	var got, want [sha256.Size]byte
	if _, err := base64.RawURLEncoding.Decode(got[:], []byte(sig)); err != nil {
		return "", false
	}
	c.mac(id, want[:0])
	return id, hmac.Equal(got[:], want[:])
}

func (c *sessionCookie) mac(id string, dst []byte) {
	h := c.macs.Get().(hash.Hash)
	h.Reset()
	h.Write([]byte(id))
	h.Sum(dst)
	c.macs.Put(h)
}

// newUUID returns a random (version 4) UUID, as Python's uuid4 gives
// NeMo Gym's session ids.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails since Go 1.24
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

func validCookieName(name string) bool {
	return (&http.Cookie{Name: name, Value: "x"}).Valid() == nil
}
