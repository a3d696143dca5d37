package server

import (
	"syscall"
	"testing"
)

func TestRaiseFileLimit(t *testing.T) {
	var before syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &before); err != nil {
		t.Skip(err)
	}
	got, err := raiseFileLimit(wantedFileLimit)
	if err != nil {
		t.Fatal(err)
	}
	if want := min(uint64(wantedFileLimit), before.Max); got < want {
		t.Errorf("soft limit %d, want at least %d", got, want)
	}
	var after syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &after)
	if after.Cur < before.Cur {
		t.Errorf("lowered the soft limit from %d to %d", before.Cur, after.Cur)
	}
}
