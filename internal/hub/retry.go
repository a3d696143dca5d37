package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Transient marks an error worth another try: a dropped connection, a
// cut-off body.
type Transient struct{ Err error }

func (t Transient) Error() string { return t.Err.Error() }
func (t Transient) Unwrap() error { return t.Err }

// Busy is a 429 or 5xx answer, worth another try after the wait the
// server asked for. It does not unwrap to Err: Err is what Retry returns
// once the tries are spent.
type Busy struct {
	Err   error
	wait  time.Duration
	asked bool // the server named the wait (Retry-After)
}

func (b *Busy) Error() string { return b.Err.Error() }

// RetryLater makes err, the error of the answer resp, a *Busy when the
// status says the server may answer later.
func RetryLater(resp *http.Response, err error) error {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return err
	}
	b := &Busy{Err: err}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		b.wait, b.asked = time.Duration(s)*time.Second, true
	}
	return b
}

// Retrier retries a request's tries: a Transient or *Busy error is tried
// again, with a doubling wait; any other ends it.
type Retrier struct {
	// Retries caps the retries (0: 5, negative: none); Backoff is the
	// first wait (0: 1 s).
	Retries int
	Backoff time.Duration
	// Log receives a line per retry, led by Service; nil is silent.
	Log     io.Writer
	Service string
}

// maxWait bounds one wait between tries, whatever Retry-After asks.
const maxWait = time.Minute

// Do runs try until it succeeds, fails for good, or the retries are
// spent. u names the request in errors and log lines: it must hold no
// secret.
func (r Retrier) Do(ctx context.Context, u string, try func() error) error {
	retries, wait := r.Retries, r.Backoff
	if retries == 0 {
		retries = 5
	}
	if wait == 0 {
		wait = time.Second
	}
	for attempt := 0; ; attempt++ {
		err := try()
		sleep := wait
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			return nil
		}
		var busy *Busy
		var tr Transient
		switch {
		case errors.As(err, &busy):
			if attempt >= retries {
				return busy.Err
			}
			// The server's own Retry-After is the wait it asked for;
			// without one, the backoff.
			if busy.asked {
				sleep = min(busy.wait, maxWait)
			}
		case errors.As(err, &tr):
			if attempt >= retries {
				return fmt.Errorf("%s: %w (after %d tries)", u, tr.Err, attempt+1)
			}
		default:
			return err
		}
		if r.Log != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, u) {
				msg = u + ": " + msg
			}
			fmt.Fprintf(r.Log, "%s: %s; retrying in %s\n", r.Service, msg, sleep)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(sleep):
		}
		wait = min(wait*2, maxWait)
	}
}
