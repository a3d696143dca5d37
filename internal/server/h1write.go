package server

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// requestHeaderWritten are the header keys net/http's Request.Write writes
// from the request's fields, not its Header.
var requestHeaderWritten = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// writeRequest writes req as http.Transport puts it on the wire —
// Request.Write's bytes, with "Accept-Encoding: gzip" after the header
// when gzip is asked — without Request.Write's formatting and transfer
// writer for the requests gym's clients make: a known length, no
// trailers, no Connection: close, a plain host. Others go through
// Request.Write. The body is closed, as Request.Write closes it.
func writeRequest(bw *bufio.Writer, req *http.Request, gzip bool) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	ruri := req.URL.RequestURI()
	noBody := req.Body == nil || req.Body == http.NoBody
	if req.Close || req.TransferEncoding != nil || req.Trailer != nil || method == http.MethodConnect ||
		!simpleHost(host) || !visibleASCII(ruri) || knownMethod([]byte(method)) == "" ||
		req.ContentLength < 0 || req.ContentLength == 0 && !noBody || req.ContentLength > 0 && noBody {
		return writeRequestSlow(bw, req, gzip)
	}
	bw.WriteString(method)
	bw.WriteByte(' ')
	bw.WriteString(ruri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.Write(crlf)
	userAgent := "Go-http-client/1.1"
	if _, ok := req.Header["User-Agent"]; ok {
		userAgent = req.Header.Get("User-Agent")
	}
	if userAgent != "" {
		bw.WriteString("User-Agent: ")
		bw.WriteString(sanitizedValue(userAgent))
		bw.Write(crlf)
	}
	if req.ContentLength > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		var digits [20]byte
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(digits[:0], req.ContentLength, 10))
		bw.Write(crlf)
	}
	writeHeaderFields(bw, req.Header, requestHeaderWritten)
	if gzip {
		bw.WriteString("Accept-Encoding: gzip\r\n")
	}
	bw.Write(crlf)
	if noBody {
		return nil
	}
	// A body not already in memory (NewRequest sets GetBody for those) may
	// be slow to come: the head goes first, as with Request.Write.
	if req.GetBody == nil {
		if err := bw.Flush(); err != nil {
			req.Body.Close()
			return err
		}
	}
	n, err := io.Copy(bw, io.LimitReader(req.Body, req.ContentLength))
	if err == nil {
		var extra int64
		extra, err = io.Copy(io.Discard, req.Body)
		n += extra
	}
	closeErr := req.Body.Close()
	switch {
	case err != nil:
		return err
	case closeErr != nil:
		return closeErr
	case n != req.ContentLength:
		return fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, n)
	}
	return nil
}

// writeRequestSlow is Request.Write, with gzip asked in the header.
func writeRequestSlow(bw *bufio.Writer, req *http.Request, gzip bool) error {
	if gzip {
		out := *req
		out.Header = req.Header.Clone()
		if out.Header == nil {
			out.Header = http.Header{}
		}
		out.Header["Accept-Encoding"] = []string{"gzip"}
		req = &out
	}
	return req.Write(bw)
}

// sanitizedValue is a header value as net/http writes it: line breaks
// turned to spaces, then trimmed.
func sanitizedValue(v string) string {
	if strings.ContainsAny(v, "\r\n") {
		v = strings.NewReplacer("\n", " ", "\r", " ").Replace(v)
	}
	return strings.Trim(v, " \t\n\r")
}

// headerSortLimit is the most header keys writeHeaderFields sorts on the
// stack; a header with more goes through net/http's writer.
const headerSortLimit = 16

// writeHeaderFields writes h's fields but those in exclude as
// http.Header.WriteSubset writes them — keys in order, invalid keys
// dropped, each value sanitized — without WriteSubset's pooled sorter
// and its replacer pass over every value, which cost a few percent of a
// server's CPU at gym's request rates.
func writeHeaderFields(bw *bufio.Writer, h http.Header, exclude map[string]bool) {
	if len(h) > headerSortLimit {
		h.WriteSubset(bw, exclude)
		return
	}
	var buf [headerSortLimit]string
	keys := buf[:0]
	for k := range h {
		if !exclude[k] {
			keys = append(keys, k)
		}
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	for _, k := range keys {
		if !fieldName(k) {
			continue
		}
		for _, v := range h[k] {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(sanitizedValue(v))
			bw.Write(crlf)
		}
	}
}
