package iostreams

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/progress"
)

func TestModes(t *testing.T) {
	tests := []struct {
		name                 string
		stdoutTTY, stderrTTY bool
		noColor, jsonLines   bool
		wantColor            bool
		wantProgress         progress.Mode
	}{
		{name: "pipes", wantProgress: progress.Plain},
		{name: "a terminal", stdoutTTY: true, stderrTTY: true, wantColor: true, wantProgress: progress.Terminal},
		{name: "NO_COLOR", stdoutTTY: true, stderrTTY: true, noColor: true, wantProgress: progress.Terminal},
		{name: "stdout piped, stderr a terminal", stderrTTY: true, wantProgress: progress.Terminal},
		{name: "JSON progress wins over the terminal", stderrTTY: true, jsonLines: true, wantProgress: progress.JSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := Test()
			ios.SetStdoutTTY(tt.stdoutTTY)
			ios.SetStderrTTY(tt.stderrTTY)
			ios.SetNoColor(tt.noColor)
			if got := ios.ColorEnabled(); got != tt.wantColor {
				t.Errorf("ColorEnabled = %v, want %v", got, tt.wantColor)
			}
			if got := ios.ProgressMode(tt.jsonLines); got != tt.wantProgress {
				t.Errorf("ProgressMode = %v, want %v", got, tt.wantProgress)
			}
		})
	}
}

func TestWithErrOutKeepsTheTerminalFlags(t *testing.T) {
	ios, _, _, errOut := Test()
	ios.SetStderrTTY(true)
	_, _, _, screen := Test()
	c := ios.WithErrOut(screen)
	if !c.IsStderrTTY() || c.ErrOut != screen || ios.ErrOut != errOut {
		t.Errorf("copy: tty %v, ErrOut replaced %v, original kept %v", c.IsStderrTTY(), c.ErrOut == screen, ios.ErrOut == errOut)
	}
}

func TestSystemReadsNoColor(t *testing.T) {
	ios := System(func(k string) (string, bool) { return "", k == "NO_COLOR" })
	if !ios.noColor {
		t.Error("NO_COLOR set but colour allowed")
	}
}
