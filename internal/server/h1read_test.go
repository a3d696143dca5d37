package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// FuzzParseResponseHead holds parseResponseHead to http.ReadResponse:
// whatever head it takes, net/http reads as the same answer.
func FuzzParseResponseHead(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nDate: Sun, 06 Dec 2026 10:00:00 GMT\r\n\r\n",
		"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\nRetry-After: 1\r\n\r\n",
		"HTTP/1.1 299\r\nContent-Length: 10\r\nConnection: keep-alive\r\nX-A:  v \t\r\n\r\n",
		"HTTP/1.1 404 Not  Found\r\nContent-Length: 00\r\nX-Obs: \xfe\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	get, _ := http.NewRequest(http.MethodGet, "http://h/x", nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		end := bytes.Index(data, headEnd)
		if end < 0 {
			return
		}
		head := data[:end+len(headEnd)]
		got, ok := parseResponseHead(head)
		if !ok {
			return
		}
		want, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), get)
		if err != nil {
			t.Fatalf("parseResponseHead took %q, which http.ReadResponse refuses: %v", head, err)
		}
		switch {
		case got.Status != want.Status || got.StatusCode != want.StatusCode || got.Proto != want.Proto ||
			got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor:
			t.Fatalf("%q: %q %d %s, net/http %q %d %s", head, got.Status, got.StatusCode, got.Proto, want.Status, want.StatusCode, want.Proto)
		case got.ContentLength != want.ContentLength || got.Close != want.Close:
			t.Fatalf("%q: length %d close %v, net/http %d %v", head, got.ContentLength, got.Close, want.ContentLength, want.Close)
		case want.TransferEncoding != nil || want.Trailer != nil || want.Uncompressed:
			t.Fatalf("%q: net/http reads Transfer-Encoding %q, Trailer %q", head, want.TransferEncoding, want.Trailer)
		case fmt.Sprint(got.Header) != fmt.Sprint(want.Header):
			t.Fatalf("%q: header %q, net/http %q", head, got.Header, want.Header)
		}
	})
}

// readResponse answers what http.ReadResponse answers, body and errors
// included, for answers it reads itself and for those it leaves.
func TestReadResponseMatchesNetHTTP(t *testing.T) {
	get, _ := http.NewRequest(http.MethodGet, "http://h/x", nil)
	head, _ := http.NewRequest(http.MethodHead, "http://h/x", nil)
	for _, c := range []struct {
		raw string
		req *http.Request
	}{
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", get},
		{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", get},
		{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", get},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi", get},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", get},
		{"HTTP/1.1 200 OK\r\n\r\nuntil close", get},
		{"HTTP/1.1 204 No Content\r\n\r\n", get},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", head},
		{"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", get},
		{"HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", get},
		{"HTTP/1.1 200 OK\r\nContent-Len", get},
		{"", get},
		{"HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 10000) + "\r\nContent-Length: 2\r\n\r\nhi", get},
	} {
		got, gotErr := readResponse(bufio.NewReaderSize(strings.NewReader(c.raw), 8<<10), c.req)
		want, wantErr := http.ReadResponse(bufio.NewReaderSize(strings.NewReader(c.raw), 8<<10), c.req)
		if errString(gotErr) != errString(wantErr) {
			t.Errorf("%q: error %v, net/http %v", c.raw, gotErr, wantErr)
			continue
		}
		if gotErr != nil {
			continue
		}
		gotBody, gotReadErr := io.ReadAll(got.Body)
		wantBody, wantReadErr := io.ReadAll(want.Body)
		if string(gotBody) != string(wantBody) || errString(gotReadErr) != errString(wantReadErr) ||
			got.Status != want.Status || got.ContentLength != want.ContentLength || got.Close != want.Close ||
			fmt.Sprint(got.Header) != fmt.Sprint(want.Header) || (got.Body == http.NoBody) != (want.Body == http.NoBody) {
			t.Errorf("%q: read %q %d %v %q %q (%v), net/http %q %d %v %q %q (%v)", c.raw,
				got.Status, got.ContentLength, got.Close, got.Header, gotBody, gotReadErr,
				want.Status, want.ContentLength, want.Close, want.Header, wantBody, wantReadErr)
		}
	}
}

// resetOnce reads as a reset connection does: the reset, then the end.
type resetOnce struct{ reported bool }

func (r *resetOnce) Read([]byte) (int, error) {
	if r.reported {
		return 0, io.EOF
	}
	r.reported = true
	return 0, syscall.ECONNRESET
}

// A read error met while waiting for the head is the error reported, as
// http.ReadResponse reports it.
func TestReadResponseKeepsReadError(t *testing.T) {
	get, _ := http.NewRequest(http.MethodGet, "http://h/x", nil)
	for _, before := range []string{"", "HTTP/1.1 200 OK\r\n"} {
		src := func() *bufio.Reader {
			return bufio.NewReader(io.MultiReader(strings.NewReader(before), &resetOnce{}))
		}
		_, got := readResponse(src(), get)
		_, want := http.ReadResponse(src(), get)
		if errString(got) != errString(want) || before == "" && !errors.Is(got, syscall.ECONNRESET) {
			t.Errorf("after %q: %v, net/http %v", before, got, want)
		}
	}
}
