package server

import (
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
)

// parseHead builds the request whose head is head (request line through the
// blank line, CRLF-terminated) the way http.ReadRequest and net/http's
// server would, for the requests gym's own connection loop serves: HTTP/1.1
// with one Host header and at most one Content-Length, and none of the
// headers that change how the connection is used (Connection but for
// keep-alive, Expect, Transfer-Encoding, Upgrade, Te, Trailer, Pragma,
// HTTP2-Settings).
// Anything else — another method than the usual six, another version, a
// folded line, a byte net/http would refuse or quote — answers ok false,
// and the connection goes to net/http's server, which answers it as it
// always has. ok true means net/http would have built the same request
// (FuzzParseHead holds the two to that). req gets the fields ReadRequest
// sets; when ok is false it is left half-filled.
func parseHead(head []byte, req *http.Request) (contentLength int64, ok bool) {
	line, rest, found := bytes.Cut(head, crlf)
	if !found {
		return 0, false
	}
	methodB, line, _ := bytes.Cut(line, space)
	target, proto, _ := bytes.Cut(line, space)
	method := knownMethod(methodB)
	if method == "" || string(proto) != "HTTP/1.1" || len(target) == 0 || target[0] != '/' || !visibleASCII(target) {
		return 0, false
	}
	requestURI := string(target)
	u, err := url.ParseRequestURI(requestURI)
	if err != nil || u.Host != "" {
		return 0, false
	}

	hr := newHeaderReader(rest)
	if hr.lines < 1 {
		return 0, false
	}
	var host string
	contentLength = -1
	for hr.lines > 0 {
		key, v, ok := hr.next()
		if !ok {
			return 0, false
		}
		switch key {
		case "Expect", "Transfer-Encoding", "Upgrade", "Te", "Trailer", "Pragma", "Http2-Settings":
			return 0, false
		case "Connection":
			// keep-alive, which Python's requests sends, changes nothing
			// in HTTP/1.1; anything else is net/http's to read.
			if !bytes.EqualFold(v, []byte("keep-alive")) {
				return 0, false
			}
		case "Host":
			if host != "" || !simpleHost(v) {
				return 0, false
			}
			host = string(v)
			continue // net/http's server takes Host out of the header
		case "Content-Length":
			n, ok := decimal(v)
			if contentLength >= 0 || !ok {
				return 0, false
			}
			contentLength = n
		}
		hr.add(key, v)
	}
	if host == "" {
		return 0, false
	}
	if contentLength < 0 {
		contentLength = 0
	}
	req.Method, req.URL, req.RequestURI, req.Host = method, u, requestURI, host
	req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/1.1", 1, 1
	req.Header, req.ContentLength = hr.header, contentLength
	return contentLength, true
}

// headerReader reads the header lines of a head (after its first line, to
// the blank line) into an http.Header as textproto does: each name a
// token, canonicalized; each value of valid bytes, trimmed of spaces and
// tabs; the values of the header in one allocation.
type headerReader struct {
	rest   []byte
	lines  int // left to read
	header http.Header
	values []string
}

func newHeaderReader(rest []byte) headerReader {
	lines := max(bytes.Count(rest, crlf)-1, 0) // the last one ends the blank line
	return headerReader{rest: rest, lines: lines, header: make(http.Header, lines), values: make([]string, lines)}
}

// next is the next line's name and value; ok is false for a line net/http
// would refuse or read otherwise.
func (r *headerReader) next() (key string, v []byte, ok bool) {
	r.lines--
	kv, rest, _ := bytes.Cut(r.rest, crlf)
	r.rest = rest
	k, v, found := bytes.Cut(kv, colon)
	if !found || !fieldName(k) {
		return "", nil, false
	}
	v = trimSpaceTab(v)
	if !fieldValue(v) {
		return "", nil, false
	}
	return canonicalKey(k), v, true
}

// add appends v to the header's values of key.
func (r *headerReader) add(key string, v []byte) {
	value := string(v)
	if vv := r.header[key]; vv != nil {
		r.header[key] = append(vv, value)
		return
	}
	r.values[0] = value
	r.header[key], r.values = r.values[:1:1], r.values[1:]
}

// canonicalKey is textproto's canonical form of the header name k (a
// token), without allocating for the names gym's and NeMo Gym's clients
// send.
func canonicalKey(k []byte) string {
	var buf [32]byte
	if len(k) > len(buf) {
		return textproto.CanonicalMIMEHeaderKey(string(k))
	}
	c := buf[:len(k)]
	upper := true
	for i, b := range k {
		switch {
		case upper && 'a' <= b && b <= 'z':
			b -= 'a' - 'A'
		case !upper && 'A' <= b && b <= 'Z':
			b += 'a' - 'A'
		}
		c[i] = b
		upper = b == '-'
	}
	switch string(c) {
	case "Host":
		return "Host"
	case "Content-Length":
		return "Content-Length"
	case "Content-Type":
		return "Content-Type"
	case "Cookie":
		return "Cookie"
	case "Accept":
		return "Accept"
	case "Accept-Encoding":
		return "Accept-Encoding"
	case "User-Agent":
		return "User-Agent"
	case "Authorization":
		return "Authorization"
	case RunTokenHeader:
		return RunTokenHeader
	}
	return string(c)
}

var (
	crlf  = []byte("\r\n")
	space = []byte(" ")
	colon = []byte(":")
)

// knownMethod is method as a constant string (no allocation) when it is one
// of the methods gym's servers answer; HEAD, CONNECT and the rest go to
// net/http.
func knownMethod(m []byte) string {
	switch string(m) {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodOptions:
		return http.MethodOptions
	}
	return ""
}

// visibleASCII is whether b is all printable ASCII without spaces, so url
// parsing sees what net/http's would.
func visibleASCII[T string | []byte](b T) bool {
	for i := range len(b) {
		if b[i] <= ' ' || b[i] >= 0x7f {
			return false
		}
	}
	return true
}

// fieldName is whether k is an RFC 9110 token, as a header name must be.
func fieldName[T string | []byte](k T) bool {
	if len(k) == 0 {
		return false
	}
	for i := range len(k) {
		if !tokenByte[k[i]] {
			return false
		}
	}
	return true
}

// fieldValue is whether v holds only bytes textproto accepts in a header
// value: visible ASCII, space, tab and obs-text.
func fieldValue(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// simpleHost is whether a Host value is a plain host[:port] that every
// check of net/http's accepts.
func simpleHost[T string | []byte](v T) bool {
	if len(v) == 0 {
		return false
	}
	for i := range len(v) {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == ':' || c == '_' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// decimal parses a Content-Length as net/http does, refusing what it would.
func decimal(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// tokenByte marks the bytes of an RFC 9110 token.
var tokenByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// trimSpaceTab is v without leading and trailing spaces and tabs.
func trimSpaceTab(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}
