package hub

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/progress"
)

// Resumed reads the answer to a GET that asked for a file's bytes from
// have on (part holds the ones before; have 0: the whole file was asked
// for): true when the server sent just those. A server that resumed at
// another offset, or no longer has what part holds (416), has part removed
// and is a Transient error, so that the next try starts over; part of a
// file where the whole was asked for is an error. Any other answer is
// false, for the caller to judge by its status and, if it is a success,
// write from the start.
func Resumed(resp *http.Response, part string, have int64) (bool, error) {
	switch {
	case resp.StatusCode == http.StatusPartialContent && have == 0:
		return false, fmt.Errorf("the server sent part of the file (%s) where the whole was asked for", resp.Header.Get("Content-Range"))
	case resp.StatusCode == http.StatusPartialContent:
		if !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes "+strconv.FormatInt(have, 10)+"-") {
			os.Remove(part)
			return false, Transient{errors.New("the server resumed at another offset; starting again")}
		}
		return true, nil
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		os.Remove(part)
		return false, Transient{errors.New("the partial download no longer matches; starting again")}
	}
	return false, nil
}

// WritePart writes body into part, after what part holds when resumed
// (Resumed's answer) and in its place otherwise, counting the bytes on
// meter, which it finishes. A body cut off is a Transient error: part keeps what came, for
// the next try to resume from.
func WritePart(part string, resumed bool, body io.Reader, meter progress.Meter) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if resumed {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		meter.Finish()
		return err
	}
	_, copyErr := io.Copy(f, &progress.Reader{R: body, Meter: meter})
	meter.Finish()
	if err := f.Close(); err != nil {
		return err
	}
	if copyErr != nil {
		return Transient{copyErr}
	}
	return nil
}
