package modelserver

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// A provider's Responses stream with reasoning sent as output_text, in the
// shapes the fix covers and those it leaves alone.
const (
	providerStream = "event: response.created\n" +
		`data: {"type":"response.created","response":{"id":"r","output":[],"reasoning":{"effort":"low"}}}` + "\n\n" +
		": a comment line\n\n" +
		"event: response.output_item.added\r\n" +
		`data: {"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs","content":[]}}` + "\r\n\r\n" +
		"event: response.content_part.added\n" +
		`data: {"type":"response.content_part.added","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}` + "\n\n" +
		"event: response.output_text.delta\n" +
		`data: {"type":"response.output_text.delta","output_index":0,"delta":"hmm \"reasoning\""}` + "\n\n" +
		"event: response.content_part.done\n" +
		`data: {"type":"response.content_part.done","output_index":0,"content_index":0,"part":{"type":"output_text","text":"hmm","annotations":[]}}` + "\n\n" +
		"event: response.output_item.done\n" +
		`data: {"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs","content":[{"type":"output_text","text":"hmm"}]}}` + "\n\n" +
		"event: response.content_part.added\n" +
		`data: {"type":"response.content_part.added","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}` + "\n\n" +
		"event: response.completed\n" +
		`data: {"type":"response.completed","response":{"id":"r","output":[{"type":"reasoning","content":[{"type":"output_text","text":"hmm"}]},{"type":"message","content":[{"type":"output_text","text":"hi","annotations":[]}]}]}}` + "\n\n" +
		"data: [DONE]"

	fixedStream = "event: response.created\n" +
		`data: {"type":"response.created","response":{"id":"r","output":[],"reasoning":{"effort":"low"}}}` + "\n\n" +
		": a comment line\n\n" +
		"event: response.output_item.added\r\n" +
		`data: {"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs","content":[]}}` + "\r\n\r\n" +
		"event: response.content_part.added\n" +
		`data: {"type":"response.content_part.added","output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":"","annotations":[]}}` + "\n\n" +
		"event: response.output_text.delta\n" +
		`data: {"type":"response.output_text.delta","output_index":0,"delta":"hmm \"reasoning\""}` + "\n\n" +
		"event: response.content_part.done\n" +
		`data: {"type":"response.content_part.done","output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":"hmm","annotations":[]}}` + "\n\n" +
		"event: response.output_item.done\n" +
		`data: {"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs","content":[{"type":"reasoning_text","text":"hmm"}]}}` + "\n\n" +
		"event: response.content_part.added\n" +
		`data: {"type":"response.content_part.added","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}` + "\n\n" +
		"event: response.completed\n" +
		`data: {"type":"response.completed","response":{"id":"r","output":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"hmm"}]},{"type":"message","content":[{"type":"output_text","text":"hi","annotations":[]}]}]}}` + "\n\n" +
		"data: [DONE]"
)

func TestFixReasoningStream(t *testing.T) {
	readers := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
	}
	for name, wrap := range readers {
		t.Run(name, func(t *testing.T) {
			s := FixReasoningStream(io.NopCloser(wrap(strings.NewReader(providerStream))))
			got, err := io.ReadAll(iotest.OneByteReader(s))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != fixedStream {
				t.Errorf("got\n%s\nwant\n%s", got, fixedStream)
			}
		})
	}
}

func TestFixReasoningStreamLongLine(t *testing.T) {
	text := strings.Repeat("x", 100<<10)
	in := `data: {"type":"response.output_item.done","output_index":3,"item":{"type":"reasoning","content":[{"type":"output_text","text":"` + text + `"}]}}` + "\n\n"
	want := strings.Replace(in, "output_text", "reasoning_text", 1)
	got, err := io.ReadAll(FixReasoningStream(io.NopCloser(strings.NewReader(in))))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("the 100 KiB line was not fixed whole (got %d bytes, want %d)", len(got), len(want))
	}
}

// Each event is handed on as soon as it is complete, while the upstream
// is still sending: a stream is never held back waiting for the next one.
func TestFixReasoningStreamDoesNotWait(t *testing.T) {
	pr, pw := io.Pipe()
	s := FixReasoningStream(pr)
	defer s.Close()
	events := []struct{ in, want string }{
		{"event: a\ndata: {}\n\n", "event: a\ndata: {}\n\n"},
		{`data: {"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","content":[{"type":"output_text","text":""}]}}` + "\n\n",
			`data: {"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","content":[{"type":"reasoning_text","text":""}]}}` + "\n\n"},
	}
	for i, ev := range events {
		go pw.Write([]byte(ev.in))
		got := make(chan string, 1)
		go func() {
			buf := make([]byte, 1024)
			n, _ := s.Read(buf)
			got <- string(buf[:n])
		}()
		select {
		case g := <-got:
			if g != ev.want {
				t.Errorf("event %d: got %q, want %q", i, g, ev.want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("event %d was not handed on while the upstream stays open", i)
		}
	}
	pw.Close()
}
