package main

import (
	"errors"
	"fmt"
	"io"

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

// exitCode prints err and maps it to the process exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var usage *usageError
	var selector *resolve.SelectorError
	switch {
	case errors.As(err, &usage), errors.As(err, &selector):
		return exitUsage
	}
	return exitFailure
}
