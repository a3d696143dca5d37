package hubtest

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Faults are the failures a fake server is told to serve next: a
// download cut short or stalled, statuses refusing requests. A Server
// embeds them; so does gitlabtest's.
type Faults struct {
	mu       sync.Mutex
	cutOnce  map[string]int // path → bytes to send before cutting the next download
	stall    map[string]int
	unsized  map[string]bool // the next ranged answer's Content-Range names no size
	refusals []int           // statuses the next requests get, in order
}

// UnsizedNext makes the next ranged answer for path name no total size
// (Content-Range: bytes a-b/*), as a server may that does not know it.
func (f *Faults) UnsizedNext(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsized == nil {
		f.unsized = map[string]bool{}
	}
	f.unsized[path] = true
}

// CutNext makes the next download of path stop after n bytes.
func (f *Faults) CutNext(path string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cutOnce == nil {
		f.cutOnce = map[string]int{}
	}
	f.cutOnce[path] = n
}

// StallNext makes the next download of path send n bytes and then
// nothing, until the client goes away: a transfer a signal interrupts.
func (f *Faults) StallNext(path string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stall == nil {
		f.stall = map[string]int{}
	}
	f.stall[path] = n
}

// Refuse answers the next n requests with status (and Retry-After: 0).
func (f *Faults) Refuse(n, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.refusals = append(f.refusals, status)
	}
}

// Refusal takes the status the next request is refused with, if any, and
// sets Retry-After: 0 on w for it.
func (f *Faults) Refusal(w http.ResponseWriter) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refusals) == 0 {
		return 0, false
	}
	status := f.refusals[0]
	f.refusals = f.refusals[1:]
	w.Header().Set("Retry-After", "0")
	return status, true
}

// Download is what was asked of the next GET of a path.
type Download struct {
	cut, stall        int
	cutting, stalling bool
	unsized           bool
}

// NextDownload takes the faults asked for the next GET of path.
func (f *Faults) NextDownload(path string, r *http.Request) Download {
	f.mu.Lock()
	defer f.mu.Unlock()
	var d Download
	d.cut, d.cutting = f.cutOnce[path]
	d.stall, d.stalling = f.stall[path]
	d.unsized = f.unsized[path] && r.Header.Get("Range") != ""
	delete(f.cutOnce, path)
	delete(f.stall, path)
	if d.unsized {
		delete(f.unsized, path)
	}
	return d
}

// Serve answers a GET of b as d asks: stalled, cut, or whole with ranges.
func (d Download) Serve(w http.ResponseWriter, r *http.Request, b []byte) {
	if d.stalling {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:d.stall])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	if d.cutting {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:d.cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	if d.unsized {
		w = unsizedRange{w}
	}
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(b)))
}

// unsizedRange rewrites a Content-Range's total size to "*".
type unsizedRange struct{ http.ResponseWriter }

func (u unsizedRange) WriteHeader(status int) {
	h := u.Header()
	if cr := h.Get("Content-Range"); cr != "" {
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			h.Set("Content-Range", cr[:i+1]+"*")
		}
	}
	u.ResponseWriter.WriteHeader(status)
}
