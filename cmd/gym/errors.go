package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Exit codes: 0 ok, 1 failure, 2 usage.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a mistake in how gym was invoked.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// interruptIsTheEnd marks a command (by its annotation) whose normal end is
// an interruption, such as `gym env start`'s Ctrl-C.
const interruptIsTheEnd = "interrupt-is-the-end"

// interruptedError is the cause of a run a signal cancelled.
type interruptedError struct{ sig syscall.Signal }

func (e *interruptedError) Error() string { return "interrupted by " + signalName(e.sig) }

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// exitCode prints err and maps it to the process exit code. A run a signal
// cancelled exits 128+signal (130 for SIGINT, 143 for SIGTERM), whatever
// the command made of the cancellation, so an interrupted job never looks
// like success; unless interruption is how the command normally ends.
func exitCode(err error, cause error, interruptIsNormal bool, stderr io.Writer) int {
	var interrupted *interruptedError
	if errors.As(cause, &interrupted) {
		if interruptIsNormal && (err == nil || errors.Is(err, context.Canceled)) {
			return exitOK
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "Error: %v\n", err)
		}
		fmt.Fprintf(stderr, "Interrupted by %s; the work is not finished.\n", signalName(interrupted.sig))
		return 128 + int(interrupted.sig)
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var (
		usage      *usageError
		selector   *resolve.SelectorError
		missing    *config.MissingSettingsError
		badSetting *config.BadSettingError
	)
	switch {
	case errors.As(err, &usage), errors.As(err, &selector), errors.As(err, &missing), errors.As(err, &badSetting):
		return exitUsage
	}
	return exitFailure
}
