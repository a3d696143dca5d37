package progress

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// render plays bytes written to a terminal onto rows of text, knowing the
// few controls the bar and the Screen use: \r, \n, ESC[K and ESC[2K (erase
// the line from the cursor, and all of it); other escapes are dropped.
func render(out string) []string {
	rows := [][]rune{{}}
	col := 0
	in := []rune(out)
	for i := 0; i < len(in); i++ {
		row := &rows[len(rows)-1]
		switch c := in[i]; {
		case c == '\r':
			col = 0
		case c == '\n':
			rows = append(rows, []rune{})
			col = 0
		case c == '\x1b' && i+1 < len(in) && in[i+1] == '[':
			j := i + 2
			for j < len(in) && (in[j] < '@' || in[j] > '~') {
				j++
			}
			if j < len(in) && in[j] == 'K' {
				if string(in[i+2:j]) == "2" {
					*row = (*row)[:0]
				} else if col < len(*row) {
					*row = (*row)[:col]
				}
			}
			i = j
		default:
			for len(*row) <= col {
				*row = append(*row, ' ')
			}
			(*row)[col] = c
			col++
		}
	}
	text := make([]string, len(rows))
	for i, r := range rows {
		text[i] = strings.TrimRight(string(r), " ")
	}
	return text
}

// Server lines, log lines and the bar all write at once; on the terminal
// every line stands whole on a row of its own and the bar stays last.
func TestScreenKeepsLinesOffTheBar(t *testing.T) {
	out := &syncBuffer{}
	screen := NewScreen(out)
	clk := newClock()
	bar := New(Options{Out: screen, Mode: Terminal, Now: clk.Now})
	bar.Start(1000, 0)
	line := func(w, i int) string { return fmt.Sprintf("(server%d) line %d of the server's output", w, i) }
	// In turn first, so every line follows a drawn bar; then all at once.
	const writers, each = 4, 50
	for i := range each {
		fmt.Fprintln(screen, line(0, i))
		clk.Advance(200 * time.Millisecond)
		bar.Add(Outcome{Reward: 1, HasReward: true})
	}
	var wg sync.WaitGroup
	for w := 1; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				fmt.Fprintln(screen, line(w, i))
			}
		}()
	}
	for range 450 {
		clk.Advance(200 * time.Millisecond)
		bar.Add(Outcome{Reward: 1, HasReward: true})
	}
	wg.Wait()
	rows := render(out.String())
	want := map[string]bool{}
	for w := range writers {
		for i := range each {
			want[line(w, i)] = true
		}
	}
	for _, row := range rows {
		if strings.Contains(row, "(server") && !want[row] {
			t.Errorf("a line shares its row with something else: %q", row)
		}
		delete(want, row)
	}
	if len(want) > 0 {
		t.Errorf("%d lines never reached the screen whole", len(want))
	}
	if last := rows[len(rows)-1]; !strings.Contains(last, "500/1000") {
		t.Errorf("the bar is not on the last row: %q", last)
	}
	bar.Finish()
}

// A line written in pieces waits for its end; Flush writes what never got
// one.
func TestScreenJoinsPiecesAndFlushesTheRest(t *testing.T) {
	out := &syncBuffer{}
	screen := NewScreen(out)
	fmt.Fprint(screen, "half a ")
	if out.String() != "" {
		t.Fatalf("an unfinished line was written: %q", out.String())
	}
	fmt.Fprint(screen, "line\nand a tail")
	if got := out.String(); got != "half a line\n" {
		t.Fatalf("got %q", got)
	}
	if err := screen.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "half a line\nand a tail\n" {
		t.Fatalf("got %q", got)
	}
}
