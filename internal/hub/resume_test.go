package hub

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/progress"
)

// Resumed keeps a part only when the server sent the bytes after it.
func TestResumed(t *testing.T) {
	for _, tc := range []struct {
		name         string
		status       int
		contentRange string
		have         int64
		resumed      bool
		transient    bool // and the part removed
		refused      bool // an error that no retry mends, the part kept
	}{
		{"resumed where the part ends", http.StatusPartialContent, "bytes 4-9/10", 4, true, false, false},
		{"resumed at another offset", http.StatusPartialContent, "bytes 2-9/10", 4, false, true, false},
		{"part of the file unasked", http.StatusPartialContent, "bytes 0-4/10", 0, false, false, true},
		{"the part no longer matches", http.StatusRequestedRangeNotSatisfiable, "bytes */3", 4, false, true, false},
		{"the whole file", http.StatusOK, "", 4, false, false, false},
		{"an error", http.StatusNotFound, "", 4, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part := filepath.Join(t.TempDir(), "f.part")
			if err := os.WriteFile(part, []byte("abcd"), 0o644); err != nil {
				t.Fatal(err)
			}
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{}}
			if tc.contentRange != "" {
				resp.Header.Set("Content-Range", tc.contentRange)
			}
			resumed, err := Resumed(resp, part, tc.have)
			var transient Transient
			if resumed != tc.resumed || errors.As(err, &transient) != tc.transient || (err != nil) != (tc.transient || tc.refused) {
				t.Fatalf("Resumed = %v, %v; want %v, transient %v, refused %v", resumed, err, tc.resumed, tc.transient, tc.refused)
			}
			if _, err := os.Stat(part); (err == nil) == tc.transient {
				t.Errorf("part there: %v; want it removed: %v", err == nil, tc.transient)
			}
		})
	}
}

// WritePart appends to a resumed part and replaces any other; a body cut
// off is worth another try, with what came kept.
func TestWritePart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resumed   bool
		body      io.Reader
		want      string
		transient bool
	}{
		{"resumed", true, strings.NewReader("efgh"), "abcdefgh", false},
		{"from the start", false, strings.NewReader("xyz"), "xyz", false},
		{"cut off", true, io.MultiReader(strings.NewReader("ef"), errReader{}), "abcdef", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part := filepath.Join(t.TempDir(), "f.part")
			if err := os.WriteFile(part, []byte("abcd"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := WritePart(part, tc.resumed, tc.body, progress.NoMeter)
			var transient Transient
			if errors.As(err, &transient) != tc.transient || (err != nil) != tc.transient {
				t.Fatalf("WritePart: %v; want transient %v", err, tc.transient)
			}
			if got, _ := os.ReadFile(part); string(got) != tc.want {
				t.Errorf("part holds %q, want %q", got, tc.want)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
