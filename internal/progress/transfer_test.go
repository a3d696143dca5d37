package progress

import (
	"strings"
	"testing"
	"time"
)

func TestMeterPlain(t *testing.T) {
	clock := newClock()
	var out syncBuffer
	m := NewMeter(Options{Out: &out, Mode: Plain, Now: clock.Now, Interval: 10 * time.Second}, "Downloading train.jsonl", 4<<20)
	m.Add(1 << 20)
	if out.String() != "" {
		t.Fatalf("a line before the interval: %q", out.String())
	}
	clock.Advance(10 * time.Second)
	m.Add(1 << 20)
	m.Add(-512 << 10) // a failed try takes its bytes back
	clock.Advance(10 * time.Second)
	m.Add(2<<20 + 512<<10)
	m.Finish()
	m.Finish()
	want := []string{
		"Downloading train.jsonl: 2.0 MiB/4.0 MiB (50.0%) | 204.8 KiB/s",
		"Downloading train.jsonl: 4.0 MiB/4.0 MiB (100.0%) | 204.8 KiB/s",
		"Downloading train.jsonl: 4.0 MiB/4.0 MiB (100.0%) | 204.8 KiB/s",
	}
	if got := lines(out.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestMeterQuietForQuickTransfers(t *testing.T) {
	var out syncBuffer
	m := NewMeter(Options{Out: &out, Mode: Plain}, "Uploading a", 10)
	m.Add(10)
	m.Finish()
	if out.String() != "" {
		t.Errorf("a quick transfer wrote %q", out.String())
	}
	if NewMeter(Options{Out: &out, Mode: JSON}, "x", 1) != NoMeter || NewMeter(Options{Mode: Plain}, "x", 1) != NoMeter {
		t.Error("JSON mode or no output should show nothing")
	}
}

func TestMeterTerminalRedraws(t *testing.T) {
	clock := newClock()
	var out syncBuffer
	m := NewMeter(Options{Out: &out, Mode: Terminal, Now: clock.Now}, "Uploading d.jsonl", -1)
	clock.Advance(time.Second)
	m.Add(2048)
	m.Finish()
	want := "\r\x1b[KUploading d.jsonl: 2.0 KiB | 2.0 KiB/s\r\x1b[KUploading d.jsonl: 2.0 KiB | 2.0 KiB/s\n"
	if out.String() != want {
		t.Errorf("terminal output %q; want %q", out.String(), want)
	}
}
