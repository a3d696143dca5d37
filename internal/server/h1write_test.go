package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func writeRequestCases(t *testing.T) map[string]func() *http.Request {
	t.Helper()
	newReq := func(method, url string, body io.Reader) *http.Request {
		req, err := http.NewRequest(method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	return map[string]func() *http.Request{
		"post json": func() *http.Request {
			req := newReq(http.MethodPost, "http://127.0.0.1:8000/v1/responses", bytes.NewReader([]byte(`{"input":"hi"}`)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Add("Cookie", "a=1")
			req.Header.Add("Cookie", "b=2")
			req.Header.Set(RunTokenHeader, "secret")
			return req
		},
		"get":           func() *http.Request { return newReq(http.MethodGet, "http://h:1/x?y=1&z=%20", nil) },
		"delete":        func() *http.Request { return newReq(http.MethodDelete, "http://h/x", nil) },
		"options":       func() *http.Request { return newReq(http.MethodOptions, "http://h/x", nil) },
		"empty method":  func() *http.Request { r := newReq(http.MethodGet, "http://h/x", nil); r.Method = ""; return r },
		"put string":    func() *http.Request { return newReq(http.MethodPut, "http://h/x", strings.NewReader("put body")) },
		"post nil body": func() *http.Request { return newReq(http.MethodPost, "http://h/x", nil) },
		"patch no body": func() *http.Request { return newReq(http.MethodPatch, "http://h/x", http.NoBody) },
		"escaped path":  func() *http.Request { return newReq(http.MethodGet, "http://h/a%2Fb/c d", nil) },
		"host override": func() *http.Request { r := newReq(http.MethodGet, "http://h/x", nil); r.Host = "other:9"; return r },
		"ipv6":          func() *http.Request { return newReq(http.MethodGet, "http://[::1]:8080/x", nil) },
		"own user agent": func() *http.Request {
			r := newReq(http.MethodGet, "http://h/x", nil)
			r.Header.Set("User-Agent", " gym\n1 ")
			return r
		},
		"no user agent": func() *http.Request {
			r := newReq(http.MethodGet, "http://h/x", nil)
			r.Header["User-Agent"] = nil
			return r
		},
		"odd headers": func() *http.Request {
			r := newReq(http.MethodGet, "http://h/x", nil)
			r.Header["Bad Key"] = []string{"v"}
			r.Header["X-Lines"] = []string{"a\r\nb", " trimmed\t"}
			r.Header["Content-Length"] = []string{"99"}
			r.Header["Host"] = []string{"ignored"}
			return r
		},
		"streamed body": func() *http.Request {
			r := newReq(http.MethodPost, "http://h/x", io.NopCloser(strings.NewReader("streamed")))
			r.ContentLength = 8
			return r
		},
		"body too long": func() *http.Request {
			r := newReq(http.MethodPost, "http://h/x", io.NopCloser(strings.NewReader("longer than said")))
			r.ContentLength = 3
			return r
		},
		"body too short": func() *http.Request {
			r := newReq(http.MethodPost, "http://h/x", io.NopCloser(strings.NewReader("ab")))
			r.ContentLength = 3
			return r
		},
		"close fails, length wrong": func() *http.Request {
			r := newReq(http.MethodPost, "http://h/x", failingClose{strings.NewReader("ab")})
			r.ContentLength = 3
			return r
		},
		"unknown length": func() *http.Request {
			r := newReq(http.MethodPost, "http://h/x", io.NopCloser(strings.NewReader("chunks")))
			r.ContentLength = -1
			return r
		},
		"close": func() *http.Request { r := newReq(http.MethodGet, "http://h/x", nil); r.Close = true; return r },
		"trailer": func() *http.Request {
			r := newReq(http.MethodGet, "http://h/x", nil)
			r.Trailer = http.Header{"X-T": nil}
			return r
		},
		"idn":  func() *http.Request { return newReq(http.MethodGet, "http://bücher.example/x", nil) },
		"zone": func() *http.Request { return newReq(http.MethodGet, "http://[fe80::1%25eth0]:80/x", nil) },
	}
}

// writeRequest writes what Request.Write does, and reports the same errors.
func TestWriteRequestMatchesRequestWrite(t *testing.T) {
	for name, build := range writeRequestCases(t) {
		t.Run(name, func(t *testing.T) {
			var got, want bytes.Buffer
			gotBW := bufio.NewWriter(&got)
			gotErr := writeRequest(gotBW, build(), false)
			gotBW.Flush()
			wantErr := build().Write(&want)
			if got.String() != want.String() || errString(gotErr) != errString(wantErr) {
				t.Errorf("writeRequest wrote\n%q (%v)\nRequest.Write\n%q (%v)", got.String(), gotErr, want.String(), wantErr)
			}
		})
	}
}

// With gzip asked, it writes what http.Transport sends.
func TestWriteRequestMatchesTransport(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan string, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			var head strings.Builder
			length := 0
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					break
				}
				head.WriteString(line)
				if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
					length, _ = strconv.Atoi(strings.TrimSpace(v))
				}
				if line == "\r\n" {
					body := make([]byte, length)
					io.ReadFull(br, body)
					head.Write(body)
					break
				}
			}
			seen <- head.String()
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			c.Close()
		}
	}()
	addr := "http://" + ln.Addr().String()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	for _, build := range []func() *http.Request{
		func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, addr+"/v1/responses?x=1", strings.NewReader(`{"a":1}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Cookie", "s=1")
			return req
		},
		func() *http.Request { req, _ := http.NewRequest(http.MethodGet, addr+"/health", nil); return req },
	} {
		resp, err := transport.RoundTrip(build())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := <-seen
		var got bytes.Buffer
		bw := bufio.NewWriter(&got)
		req := build()
		if err := writeRequest(bw, req, asksGzip(req)); err != nil {
			t.Fatal(err)
		}
		bw.Flush()
		if got.String() != want {
			t.Errorf("writeRequest wrote\n%q\nhttp.Transport sent\n%q", got.String(), want)
		}
	}
}

type failingClose struct{ io.Reader }

func (failingClose) Close() error { return errors.New("close failed") }

// headerFromFuzz reads fields from data: entries split by 0xff, each a key
// and a value split at its first 0xfe; a repeated key adds a value.
func headerFromFuzz(data string) http.Header {
	h := http.Header{}
	for _, entry := range strings.Split(data, "\xff") {
		k, v, _ := strings.Cut(entry, "\xfe")
		h[k] = append(h[k], v)
	}
	return h
}

func checkHeaderFields(t *testing.T, h http.Header, exclude map[string]bool) {
	t.Helper()
	var want bytes.Buffer
	if err := h.WriteSubset(&want, exclude); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	bw := bufio.NewWriter(&got)
	writeHeaderFields(bw, h, exclude)
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("header %q, excluding %v:\ngot  %q\nwant %q", h, exclude, got.String(), want.String())
	}
}

func TestWriteHeaderFieldsMatchesWriteSubset(t *testing.T) {
	many := http.Header{}
	for i := range headerSortLimit + 1 {
		many["X-Field-"+strconv.Itoa(i)] = []string{"v" + strconv.Itoa(i)}
	}
	for name, tc := range map[string]struct {
		h       http.Header
		exclude map[string]bool
	}{
		"nil":             {nil, nil},
		"empty":           {http.Header{}, requestHeaderWritten},
		"request":         {http.Header{"Content-Type": {"application/json"}, "Cookie": {"a=1; b=2"}, RunTokenHeader: {"t"}, "Host": {"skipped"}, "User-Agent": {"skipped"}}, requestHeaderWritten},
		"order":           {http.Header{"b": {"2"}, "A": {"1"}, "a": {"3"}, "B": {"4"}, "-": {"5"}}, nil},
		"repeated values": {http.Header{"Set-Cookie": {"a=1", "b=2", "a=3"}}, nil},
		"line breaks":     {http.Header{"X": {"a\r\nb", "\n c \r", "\r\n"}}, nil},
		"trimmed":         {http.Header{"X": {" \t a b \t ", ""}}, nil},
		"invalid keys":    {http.Header{"": {"empty"}, "X Y": {"space"}, "X:Y": {"colon"}, "é": {"utf8"}, "Ok": {"kept"}}, nil},
		"no values":       {http.Header{"X": nil, "Y": {}}, nil},
		"at the limit":    {func() http.Header { h := many.Clone(); delete(h, "X-Field-0"); return h }(), nil},
		"past the limit":  {many, map[string]bool{"X-Field-3": true}},
	} {
		t.Run(name, func(t *testing.T) { checkHeaderFields(t, tc.h, tc.exclude) })
	}
}

func FuzzWriteHeaderFields(f *testing.F) {
	f.Add("Content-Type\xfeapplication/json\xffCookie\xfea=1\xffHost\xfeh", true)
	f.Add("b\xfe2\xffA\xfe 1\r\n\xffa\xfe3\xffa\xfe4", false)
	f.Add("X Y\xfev\xff\xfeempty\xffZ\xfe\t", false)
	f.Fuzz(func(t *testing.T, data string, excludeRequest bool) {
		var exclude map[string]bool
		if excludeRequest {
			exclude = requestHeaderWritten
		}
		checkHeaderFields(t, headerFromFuzz(data), exclude)
	})
}
