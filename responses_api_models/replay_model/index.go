package replaymodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
)

// index maps the identity of a conversation so far to the model turns
// recorded after it.
type index struct {
	hs hasher
	// answers holds, for each sequence key, the recorded turns that follow
	// it, in file order; rollouts that share a prefix (repeats of one task)
	// share a key.
	answers    map[uint64][]*answer
	recordings []*recording
	turns      int
}

// answer is one recorded model turn, rendered once as the Responses
// object the server sends.
type answer struct {
	body   []byte
	source string // file:line and turn, for logs
}

// recording is what a miss is explained with: the identities of a
// rollout's instructions, input and output items, and a short label of each.
type recording struct {
	source string
	ids    []uint64
	labels []string
}

// loadIndex reads every rollouts file and indexes every turn of every
// rollout. model, when set, is the model every answer reports.
func loadIndex(ctx context.Context, files []string, model string) (*index, error) {
	idx := &index{hs: newHasher(), answers: map[uint64][]*answer{}}
	loadedAt := time.Now().Unix()
	for _, f := range files {
		if err := idx.loadFile(ctx, f, model, loadedAt); err != nil {
			return nil, err
		}
	}
	if len(idx.recordings) == 0 {
		return nil, fmt.Errorf("no recorded rollouts in %s: each line must be a rollout with responses_create_params and response", strings.Join(files, ", "))
	}
	return idx, nil
}

func (idx *index) loadFile(ctx context.Context, path, model string, loadedAt int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening the rollouts file: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if err := idx.add(line, path+":"+strconv.Itoa(n), model, loadedAt); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("reading %s: %w", path, rerr)
		}
	}
}

// add indexes one rollout line: each turn of its output under the key of
// everything before that turn.
func (idx *index) add(line []byte, source, model string, loadedAt int64) error {
	if !jsonl.Valid(line) {
		return fmt.Errorf("%s: not valid JSON", source)
	}
	root := gjson.ParseBytes(line)
	params := root.Get("responses_create_params")
	if !params.IsObject() {
		return fmt.Errorf("%s: no responses_create_params object; each line must be a rollout as `gym eval run` writes it (responses_create_params, response, reward)", source)
	}
	input := params.Get("input")
	if input.Type != gjson.String && !input.IsArray() {
		return fmt.Errorf("%s: responses_create_params.input is neither a string nor a list", source)
	}
	resp := root.Get("response")
	output := resp.Get("output")
	if !resp.IsObject() || !output.IsArray() {
		return fmt.Errorf("%s: no response object with an output list; a failed rollout has no turns to replay", source)
	}

	rec := &recording{source: source}
	seq := idx.hs.newSequence()
	push := func(id uint64, label string) {
		seq.add(id)
		rec.ids = append(rec.ids, id)
		rec.labels = append(rec.labels, label)
	}
	push(idx.hs.instructions(params.Get("instructions")), describeInstructions(params.Get("instructions")))
	forEachInputItem(input, func(item gjson.Result) {
		push(idx.hs.item(item), describeItem(item))
	})

	// Output items are pushed up to each turn's start, then the turn is
	// indexed under the sequence so far.
	items := output.Array()
	pushed := 0
	pushUpTo := func(end int) {
		for _, item := range items[pushed:end] {
			push(idx.hs.item(item), describeItem(item))
		}
		pushed = end
	}
	turns := splitTurns(items)
	for k, t := range turns {
		pushUpTo(t[0])
		body, err := render(resp, items[t[0]:t[1]], k, len(turns), recordedID(resp, len(idx.recordings)), model, loadedAt)
		if err != nil {
			return fmt.Errorf("%s: turn %d: %w", source, k+1, err)
		}
		key := seq.sum()
		idx.answers[key] = append(idx.answers[key], &answer{body: body, source: source + " turn " + strconv.Itoa(k+1)})
		idx.turns++
	}
	pushUpTo(len(items))
	idx.recordings = append(idx.recordings, rec)
	return nil
}

// key is the identity of a call's instructions and input, as the index
// keys the turn that follows them.
func (idx *index) key(instructions, input gjson.Result) uint64 {
	seq := idx.hs.newSequence()
	seq.add(idx.hs.instructions(instructions))
	forEachInputItem(input, func(item gjson.Result) { seq.add(idx.hs.item(item)) })
	return seq.sum()
}

// forEachInputItem calls fn with each item of a request's input; a string
// input is one user message, as the agent sends it.
func forEachInputItem(input gjson.Result, fn func(gjson.Result)) {
	if input.Type == gjson.String {
		fn(gjson.Parse(`{"role":"user","content":` + input.Raw + `}`))
		return
	}
	input.ForEach(func(_, item gjson.Result) bool {
		fn(item)
		return true
	})
}

// splitTurns splits a recorded output into the model's turns: each run of
// items the model produced, ended by the tool outputs that answered it or
// by the end of the output. It returns [start, end) pairs.
func splitTurns(items []gjson.Result) [][2]int {
	var turns [][2]int
	start := -1
	for i, item := range items {
		if toolProduced(item) {
			if start >= 0 {
				turns = append(turns, [2]int{start, i})
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		turns = append(turns, [2]int{start, len(items)})
	}
	return turns
}

// toolProduced reports whether an item came from a tool rather than the
// model: function_call_output, custom_tool_call_output and the like.
func toolProduced(item gjson.Result) bool {
	return strings.HasSuffix(item.Get("type").Str, "_output")
}

// recordedID is the id the last turn of a recording answers with: the
// recorded response's own, or one made from the recording's place in the
// files when it has none.
func recordedID(resp gjson.Result, n int) string {
	if id := resp.Get("id"); id.Type == gjson.String && id.Str != "" {
		return id.Str
	}
	return "resp_replay_" + strconv.Itoa(n+1)
}

// render builds turn k of n as a Responses object: the recorded response
// with output set to the turn's items. Only the last turn carries the
// recorded usage, status and incomplete_details, so that the usage an
// agent sums over the turns is exactly the recorded one, and an episode
// that ended incomplete ends the same way. Earlier turns report usage null
// (unknown), status completed, and an id of their own.
func render(resp gjson.Result, items []gjson.Result, k, n int, id, model string, loadedAt int64) ([]byte, error) {
	var out strings.Builder
	out.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString(it.Raw)
	}
	out.WriteByte(']')

	last := k == n-1
	status, incomplete, usage := `"completed"`, "null", "null"
	if last {
		incomplete = rawOr(resp.Get("incomplete_details"), "null")
		usage = rawOr(resp.Get("usage"), "null")
		switch st := resp.Get("status"); {
		case st.Type == gjson.String && st.Str != "":
			status = st.Raw
		case incomplete != "null":
			status = `"incomplete"`
		}
	} else {
		id += "_turn" + strconv.Itoa(k+1)
	}
	set := []struct{ path, raw string }{
		{"id", quote(id)},
		{"status", status},
		{"incomplete_details", incomplete},
		{"output", out.String()},
		{"usage", usage},
	}
	if model != "" {
		set = append(set, struct{ path, raw string }{"model", quote(model)})
	}
	// The fields OpenAI's Response requires, for recordings that lack them:
	// NeMo Gym's Python agent validates every answer against that model.
	for _, d := range [...]struct{ path, raw string }{
		{"object", `"response"`},
		{"created_at", strconv.FormatInt(loadedAt, 10)},
		{"model", `"replay"`},
		{"parallel_tool_calls", "true"},
		{"tool_choice", `"auto"`},
		{"tools", "[]"},
	} {
		if !resp.Get(d.path).Exists() {
			set = append(set, d)
		}
	}
	body := []byte(resp.Raw)
	for _, s := range set {
		var err error
		if body, err = sjson.SetRawBytes(body, s.path, []byte(s.raw)); err != nil {
			return nil, fmt.Errorf("setting %s: %w", s.path, err)
		}
	}
	return openai.FixProviderReasoning(body), nil
}

func rawOr(v gjson.Result, def string) string {
	if v.Exists() {
		return v.Raw
	}
	return def
}

// quote encodes s as a JSON string without Go's HTML escaping.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// describeItem is a short label of an item for a miss message, such as
// `message (user) "how's the outside?"`.
func describeItem(item gjson.Result) string {
	if !item.IsObject() {
		return "a " + item.Type.String() + " " + clip(item.Raw)
	}
	typ := item.Get("type").Str
	if typ == "" {
		typ = "message"
	}
	var b strings.Builder
	b.WriteString(typ)
	if r := item.Get("role").Str; r != "" {
		b.WriteString(" (" + r + ")")
	}
	if n := item.Get("name").Str; n != "" {
		b.WriteString(" " + n)
	}
	if c := item.Get("call_id").Str; c != "" && toolProduced(item) {
		b.WriteString(" for " + c)
	}
	for _, key := range [...]string{"arguments", "input", "output"} {
		if v := item.Get(key); v.Exists() {
			b.WriteString(" " + strconv.Quote(clip(textOf(v))))
			return b.String()
		}
	}
	for _, key := range [...]string{"content", "summary"} {
		if t := textOf(item.Get(key)); t != "" {
			b.WriteString(" " + strconv.Quote(clip(t)))
			return b.String()
		}
	}
	return b.String()
}

// textOf is the text of content: the string itself, or its parts' texts
// joined.
func textOf(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	if !v.IsArray() {
		return v.Raw
	}
	var parts []string
	v.ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String {
			parts = append(parts, t.Str)
		}
		return true
	})
	return strings.Join(parts, " ")
}

// clip shortens s for a message, on a rune boundary.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return strings.Clone(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
