package modelserver

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/openai"
)

// FixReasoningStream applies the provider reasoning fix to a Responses SSE
// stream as it passes. It rewrites only events that carry a whole item,
// part or response: `response.output_item.added`/`.done` (the item),
// `response.content_part.added`/`.done` of a reasoning item (the part) and
// every event with a `response` object (created, in_progress, completed,
// incomplete, failed). Text deltas are left alone: they carry no part
// discriminator, and renaming the provider's events would be inventing a
// protocol rather than fixing a part. Every other byte, line endings and
// comments included, passes through unchanged, and each Read returns as
// soon as the upstream has delivered a complete line.
func FixReasoningStream(rc io.ReadCloser) io.ReadCloser {
	return &reasoningStream{rc: rc, br: bufio.NewReader(rc)}
}

type reasoningStream struct {
	rc   io.ReadCloser
	br   *bufio.Reader
	line []byte // a line longer than br's buffer, gathered across reads
	out  []byte // fixed bytes not yet returned
	next int    // out[next:] is what is left to return
	err  error  // the upstream's error, returned once out is drained
	// The output indexes of reasoning items, from output_item events, so
	// their content_part events can be recognised.
	reasoning map[int64]bool
}

func (s *reasoningStream) Read(p []byte) (int, error) {
	for s.next == len(s.out) {
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.out[s.next:])
	s.next += n
	return n, nil
}

func (s *reasoningStream) Close() error { return s.rc.Close() }

// fill reads at least one line, then every further complete line the
// upstream has already delivered, so that a burst of events is handed on
// in one piece and a slow event is never held back behind the next one.
func (s *reasoningStream) fill() {
	s.out, s.next = s.out[:0], 0
	for {
		chunk, err := s.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.line = append(s.line, chunk...)
			continue
		}
		line := chunk
		if len(s.line) > 0 {
			s.line = append(s.line, chunk...)
			line = s.line
		}
		if err != nil {
			// A last line without its newline is passed on as it came.
			s.out = append(s.out, line...)
			s.line, s.err = s.line[:0], err
			return
		}
		s.out = append(s.out, s.fixLine(line)...)
		s.line = s.line[:0]
		if s.br.Buffered() == 0 {
			return
		}
		if buffered, _ := s.br.Peek(s.br.Buffered()); bytes.IndexByte(buffered, '\n') < 0 {
			return
		}
	}
}

var (
	dataField         = []byte("data:")
	reasoningMarker   = []byte(`"reasoning"`)
	contentPartMarker = []byte(`"response.content_part.`)
)

// fixLine returns line with the fix applied to its data, or line itself.
func (s *reasoningStream) fixLine(line []byte) []byte {
	if !bytes.HasPrefix(line, dataField) {
		return line
	}
	if !bytes.Contains(line, reasoningMarker) && (len(s.reasoning) == 0 || !bytes.Contains(line, contentPartMarker)) {
		return line
	}
	// SSE strips one space after the colon; the rest is the JSON.
	start := len(dataField)
	if start < len(line) && line[start] == ' ' {
		start++
	}
	end := len(bytes.TrimRight(line, "\r\n"))
	if end < start {
		return line
	}
	data := line[start:end]
	var field gjson.Result
	var fix func([]byte) []byte
	switch typ := gjson.GetBytes(data, "type").String(); {
	case strings.HasPrefix(typ, "response.output_item."):
		field, fix = gjson.GetBytes(data, "item"), openai.FixReasoningItem
		if isString(field.Get("type"), "reasoning") {
			if idx := gjson.GetBytes(data, "output_index"); idx.Type == gjson.Number {
				if s.reasoning == nil {
					s.reasoning = map[int64]bool{}
				}
				s.reasoning[idx.Int()] = true
			}
		}
	case strings.HasPrefix(typ, "response.content_part."):
		idx := gjson.GetBytes(data, "output_index")
		if idx.Type != gjson.Number || !s.reasoning[idx.Int()] {
			return line
		}
		field, fix = gjson.GetBytes(data, "part"), openai.FixReasoningPart
	default:
		field, fix = gjson.GetBytes(data, "response"), openai.FixProviderReasoning
	}
	if !field.IsObject() || field.Index <= 0 {
		return line // absent, or its offset unknown
	}
	fixed := fix([]byte(field.Raw))
	if bytes.Equal(fixed, []byte(field.Raw)) {
		return line
	}
	// gjson reports the field's offset within data.
	at := start + field.Index
	out := make([]byte, 0, len(line)+len(fixed)-len(field.Raw))
	out = append(out, line[:at]...)
	out = append(out, fixed...)
	return append(out, line[at+len(field.Raw):]...)
}

func isString(v gjson.Result, s string) bool { return v.Type == gjson.String && v.Str == s }
