package main

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestExitCodeOfAnInterruptedRun(t *testing.T) {
	sigint, sigterm := &interruptedError{sig: syscall.SIGINT}, &interruptedError{sig: syscall.SIGTERM}
	cases := []struct {
		name          string
		err, cause    error
		normal        bool
		want          int
		wantInStderr  string
		wantNoInStder string
	}{
		{name: "finished", want: 0},
		{name: "failed", err: errors.New("boom"), want: 1, wantInStderr: "Error: boom"},
		{name: "SIGINT, the command returned nil", cause: sigint, want: 130, wantInStderr: "Interrupted by SIGINT"},
		{name: "SIGTERM, the command returned the cancellation", err: context.Canceled, cause: sigterm, want: 143, wantNoInStder: "context canceled"},
		{name: "SIGINT with a real error too", err: errors.New("half written"), cause: sigint, want: 130, wantInStderr: "Error: half written"},
		{name: "env start's Ctrl-C is its normal end", err: context.Canceled, cause: sigint, normal: true, want: 0},
		{name: "env start failing while interrupted still fails", err: errors.New("port taken"), cause: sigint, normal: true, want: 130},
	}
	for _, tc := range cases {
		var stderr strings.Builder
		if got := exitCode(tc.err, tc.cause, tc.normal, &stderr); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
		if tc.wantInStderr != "" && !strings.Contains(stderr.String(), tc.wantInStderr) {
			t.Errorf("%s: stderr %q lacks %q", tc.name, stderr.String(), tc.wantInStderr)
		}
		if tc.wantNoInStder != "" && strings.Contains(stderr.String(), tc.wantNoInStder) {
			t.Errorf("%s: stderr %q has %q", tc.name, stderr.String(), tc.wantNoInStder)
		}
	}
}
