package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
)

// readResponse is http.ReadResponse, read without textproto for the
// answers gym's servers give: HTTP/1.1, a status with a body and a
// Content-Length, no Transfer-Encoding, Trailer or Pragma, and Connection
// at most close or keep-alive. Any other answer, or a head that is not
// whole in br's buffer, is left to http.ReadResponse, which reads it from
// the start (FuzzParseResponseHead holds the two equal).
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	n, err := peekHead(br, nil)
	switch {
	case errors.Is(err, errHeadTooLarge), errors.Is(err, errBareLF), req.Method == http.MethodHead:
		return http.ReadResponse(br, req)
	case err != nil:
		// The buffer forgot the error once it reported it: http.ReadResponse
		// reads what came and then meets it again.
		pending, _ := br.Peek(br.Buffered())
		return http.ReadResponse(bufio.NewReader(io.MultiReader(bytes.NewReader(pending), &errorOnce{err: err})), req)
	}
	head, _ := br.Peek(n)
	resp, ok := parseResponseHead(head)
	if !ok {
		return http.ReadResponse(br, req)
	}
	br.Discard(n)
	resp.Request = req
	if resp.ContentLength == 0 {
		resp.Body = http.NoBody
	} else {
		resp.Body = &lengthBody{br: br, remaining: resp.ContentLength}
	}
	return resp, nil
}

// peekHead waits until br's buffer holds a whole head (a first line and
// header lines, CRLF-terminated, through the blank line) and returns its
// length, reading nothing out of br. errHeadTooLarge and errBareLF say it
// never will; any other error is the read's. incomplete, when not nil,
// runs each time more must be read after the first bytes.
func peekHead(br *bufio.Reader, incomplete func()) (int, error) {
	want := 1
	for {
		if _, err := br.Peek(want); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return 0, errHeadTooLarge
			}
			return 0, err
		}
		b, _ := br.Peek(br.Buffered())
		if i := bytes.Index(b, headEnd); i >= 0 {
			return i + len(headEnd), nil
		}
		if bareLF(b) {
			return 0, errBareLF
		}
		if len(b) >= br.Size() {
			return 0, errHeadTooLarge
		}
		if incomplete != nil {
			incomplete()
		}
		want = len(b) + 1
	}
}

// errorOnce reads as the connection did: err, then the end.
type errorOnce struct{ err error }

func (r *errorOnce) Read([]byte) (int, error) {
	if r.err == nil {
		return 0, io.EOF
	}
	err := r.err
	r.err = nil
	return 0, err
}

// parseResponseHead is the response http.ReadResponse reads from head,
// when it is one readResponse serves.
func parseResponseHead(head []byte) (*http.Response, bool) {
	line, rest, _ := bytes.Cut(head, crlf)
	status, ok := bytes.CutPrefix(line, []byte("HTTP/1.1 "))
	if !ok || len(status) < 3 || !visibleOrSpace(status) {
		return nil, false
	}
	code := 0
	for _, c := range status[:3] {
		if c < '0' || c > '9' {
			return nil, false
		}
		code = code*10 + int(c-'0')
	}
	if len(status) > 3 && status[3] != ' ' || code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil, false
	}
	hr := newHeaderReader(rest)
	contentLength := int64(-1)
	closing := false
	for hr.lines > 0 {
		key, v, ok := hr.next()
		if !ok {
			return nil, false
		}
		switch key {
		case "Transfer-Encoding", "Trailer", "Pragma":
			return nil, false
		case "Connection":
			switch {
			case bytes.EqualFold(v, []byte("close")):
				closing = true
				continue // net/http takes it out of the header
			case !bytes.EqualFold(v, []byte("keep-alive")) || closing:
				return nil, false
			}
		case "Content-Length":
			n, ok := decimal(v)
			if contentLength >= 0 || !ok {
				return nil, false
			}
			contentLength = n
		}
		hr.add(key, v)
	}
	if contentLength < 0 {
		return nil, false
	}
	if closing && hr.header["Connection"] != nil {
		return nil, false
	}
	return &http.Response{
		Status:        string(status),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        hr.header,
		ContentLength: contentLength,
		Close:         closing,
	}, true
}

// visibleOrSpace is whether b is printable ASCII or spaces.
func visibleOrSpace(b []byte) bool {
	for _, c := range b {
		if c < ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// lengthBody is a body of a known length, read as net/http reads one:
// io.EOF with the last bytes, io.ErrUnexpectedEOF when the connection ends
// before them.
type lengthBody struct {
	br        *bufio.Reader
	remaining int64
	sawEOF    bool
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.sawEOF {
		return 0, io.EOF
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := b.br.Read(p)
	b.remaining -= int64(n)
	if err == io.EOF {
		b.sawEOF = true
		if b.remaining > 0 {
			err = io.ErrUnexpectedEOF
		}
	}
	if err == nil && n > 0 && b.remaining == 0 {
		err = io.EOF
		b.sawEOF = true
	}
	return n, err
}

// Close does nothing: the transport's body wrapper decides what becomes
// of the connection.
func (b *lengthBody) Close() error { return nil }
