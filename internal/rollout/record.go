package rollout

import (
	"bytes"
	"errors"
	"os"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// record is one row of a JSONL file, checked, with where its own members
// are, found in the same read: the few keys collection reads are looked up
// among a row's dozen members instead of by walking the whole row again
// for each.
type record struct {
	raw     []byte
	members []jsonl.Member
	object  bool
	spaced  bool // white space outside its strings: not already compact
}

// parse makes r the row in line, reusing r's storage; false when line is
// not valid JSON. A row that is not an object has no members.
func (r *record) parse(line []byte) bool {
	members, object, valid, spaced := jsonl.MembersLayout(line, r.members[:0])
	if !object {
		members = members[:0]
	}
	r.raw, r.members, r.object, r.spaced = line, members, object, spaced
	return valid
}

// appendCompact appends the row to dst as json.Compact writes it.
func (r *record) appendCompact(dst []byte) []byte {
	if r.spaced {
		return compactValid(dst, r.raw)
	}
	return append(dst, r.raw...)
}

// from is a copy of the row from its byte at, in storage of its own (a
// record is only valid during its read of a file): its members as found,
// without a second read. It stays spaced if the row was, even when the
// white space was all before at: that costs a compaction, never a row
// taken for compact.
func (r *record) from(at int) *record {
	c := &record{raw: bytes.Clone(r.raw[at:]), members: make([]jsonl.Member, len(r.members)), object: r.object, spaced: r.spaced}
	for i, m := range r.members {
		c.members[i] = jsonl.Member{KeyStart: m.KeyStart - at, KeyEnd: m.KeyEnd - at, ValueStart: m.ValueStart - at, ValueEnd: m.ValueEnd - at}
	}
	return c
}

// appendMember adds the member name (no escapes needed): value (valid
// JSON, compact) at the end of the row, an object, where sjson sets a key
// the row lacks, into a new row whose members found so far stay where
// they are. White space around the row is kept, where sjson drops it: a
// row with any is spaced, and compacted before it is written.
func (r *record) appendMember(name string, value []byte) {
	closer := bytes.LastIndexByte(r.raw, '}')
	row := make([]byte, 0, len(r.raw)+len(name)+len(value)+4)
	row = append(row, r.raw[:closer]...)
	if len(r.members) > 0 {
		row = append(row, ',')
	}
	m := jsonl.Member{KeyStart: len(row)}
	row = append(append(append(row, '"'), name...), '"')
	m.KeyEnd = len(row)
	row = append(row, ':')
	m.ValueStart = len(row)
	row = append(row, value...)
	m.ValueEnd = len(row)
	r.raw, r.members = append(row, r.raw[closer:]...), append(r.members, m)
}

// value is the value of the row's first member named name, as gjson.Get
// finds a top-level key, in the row's storage; nil when there is none.
func (r *record) value(name string) []byte {
	if i := r.index(name); i >= 0 {
		return r.members[i].Value(r.raw)
	}
	return nil
}

// index is where the row's first member named name is among its members,
// as gjson compares keys (unescaped); -1 when there is none.
func (r *record) index(name string) int { return jsonl.Lookup(r.raw, r.members, name) }

// get is the value named name as gjson reads it; it holds none of the
// row's storage.
func (r *record) get(name string) gjson.Result {
	v := r.value(name)
	if v == nil {
		return gjson.Result{}
	}
	return gjson.ParseBytes(v)
}

// peek is get for a value read at once: it holds the row's storage.
func (r *record) peek(name string) gjson.Result {
	v := r.value(name)
	if v == nil {
		return gjson.Result{}
	}
	return jsonl.ParseInPlace(v)
}

// key reads the row's key; ok is false when either index is missing or
// not a number.
func (r *record) key() (key, bool) {
	t, ro := r.peek(TaskIndexKey), r.peek(RolloutIndexKey)
	if t.Type != gjson.Number || ro.Type != gjson.Number {
		return key{}, false
	}
	return key{t.Int(), ro.Int()}, true
}

// agent is the row's agent_ref.name, as gjson.Get reads that path (in
// the first agent_ref that has a name); "" when there is none or it is
// not a string.
func (r *record) agent() string {
	return r.nested(AgentRefKey, "name").Str
}

// nested is gjson.Get of the path name.inner: inner in the first member
// named name that has it; it holds none of the row's storage.
func (r *record) nested(name, inner string) gjson.Result {
	for _, m := range r.members {
		if string(m.Name(r.raw)) == name {
			if v := gjson.GetBytes(m.Value(r.raw), inner); v.Exists() {
				return v
			}
		}
	}
	return gjson.Result{}
}

// result is the whole row as gjson reads it; it holds none of the row's
// storage.
func (r *record) result() gjson.Result { return gjson.ParseBytes(r.raw) }

// eachRecord calls fn with every non-blank line of a JSONL file, checked;
// a record is only valid during its call. A malformed line is an error
// naming it; a missing file has no lines.
func eachRecord(path string, fn func(lr *lineReader, r *record) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	lr := newLineReader(f, path)
	var r record
	return lr.each(func(line []byte) error {
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		if !r.parse(line) {
			return lr.errorf("Malformed JSON in '%s' at line %d: %s", path, lr.Line, jsonError(line))
		}
		return fn(lr, &r)
	})
}
