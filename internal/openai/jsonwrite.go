package openai

import (
	"crypto/rand"
	"encoding/hex"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
)

// parseObject checks that data is one valid JSON object. gjson reads
// invalid JSON without complaint, so every entry point that builds a new
// payload validates first; otherwise garbage would come out as a
// well-formed but wrong request.
func parseObject(data []byte, what string) (gjson.Result, error) {
	if !jsonl.Valid(data) {
		return gjson.Result{}, &InvalidError{Reason: what + " is not valid JSON"}
	}
	r := gjson.ParseBytes(data)
	if !r.IsObject() {
		return gjson.Result{}, &InvalidError{Reason: what + " must be a JSON object"}
	}
	return r, nil
}

// object builds a JSON object in the order members are added. Values are
// raw JSON, so an untouched member keeps its bytes, including key order and
// unknown fields nested inside it.
type object struct{ b []byte }

func newObject(sizeHint int) *object {
	o := &object{b: make([]byte, 1, sizeHint+2)}
	o.b[0] = '{'
	return o
}

func (o *object) sep() {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
}

// member adds key (plain text, encoded here) with a raw JSON value.
func (o *object) member(key, raw string) {
	o.sep()
	o.b = AppendJSONString(o.b, key)
	o.b = append(o.b, ':')
	o.b = append(o.b, raw...)
}

// rawMember adds a key exactly as the source spelled it (escapes and all).
func (o *object) rawMember(keyRaw, raw string) {
	o.sep()
	o.b = append(o.b, keyRaw...)
	o.b = append(o.b, ':')
	o.b = append(o.b, raw...)
}

func (o *object) str(key, s string) {
	o.sep()
	o.b = AppendJSONString(o.b, key)
	o.b = append(o.b, ':')
	o.b = AppendJSONString(o.b, s)
}

func (o *object) int(key string, n int64) {
	o.member(key, strconv.FormatInt(n, 10))
}

func (o *object) bytes() []byte { return append(o.b, '}') }

func (o *object) String() string { return string(o.bytes()) }

// array builds a JSON array of raw elements.
type array struct{ b []byte }

func newArray() *array { return &array{b: []byte{'['}} }

func (a *array) add(raw string) {
	if len(a.b) > 1 {
		a.b = append(a.b, ',')
	}
	a.b = append(a.b, raw...)
}

func (a *array) empty() bool { return len(a.b) == 1 }

func (a *array) String() string { return string(append(a.b, ']')) }

// quote encodes s as a JSON string. Unlike encoding/json it does not
// escape <, > and &: Python's json does not either, and `<think>` in a
// prompt should read as itself.
func quote(s string) string { return string(AppendJSONString(nil, s)) }

// AppendJSONString appends s quoted as JSON, leaving non-ASCII and HTML
// characters as they are (ensure_ascii=False, as Python servers write
// them); invalid UTF-8 becomes U+FFFD, as encoding/json does.
func AppendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// edit replaces doc[start:end] with repl.
type edit struct {
	start, end int
	repl       string
}

// splice applies non-overlapping edits in one pass, so a document with many
// small fixes is copied once rather than once per fix.
func splice(doc []byte, edits []edit) []byte {
	if len(edits) == 0 {
		return doc
	}
	if len(edits) > 1 { // sort.Slice allocates even for one element
		sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	}
	grow := 0
	for _, e := range edits {
		grow += len(e.repl) - (e.end - e.start)
	}
	out := make([]byte, 0, len(doc)+max(grow, 0))
	at := 0
	for _, e := range edits {
		out = append(out, doc[at:e.start]...)
		out = append(out, e.repl...)
		at = e.end
	}
	return append(out, doc[at:]...)
}

// replaceValue edits a value found by gjson in the document it was read
// from. gjson reports Index 0 when it cannot place a value; no value this
// package edits sits at offset 0 of its document, so 0 means "cannot edit".
func replaceValue(v gjson.Result, repl string) (edit, bool) {
	if v.Index <= 0 {
		return edit{}, false
	}
	return edit{start: v.Index, end: v.Index + len(v.Raw), repl: repl}, true
}

// newID returns prefix followed by 32 random hex digits, the shape of
// NeMo Gym's uuid4().hex ids.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return prefix + hex.EncodeToString(b[:])
}

// isString reports whether v is the JSON string s.
func isString(v gjson.Result, s string) bool {
	return v.Type == gjson.String && v.Str == s
}

// present reports whether a member exists with a non-null value; for the
// fields this package reads, an explicit null means the same as absent.
func present(v gjson.Result) bool {
	return v.Exists() && v.Type != gjson.Null
}

// integer reads a JSON number that holds a whole value (5 or 5.0).
func integer(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number {
		return 0, false
	}
	if n, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
		return n, true
	}
	f := v.Num
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// elems calls fn with each element of a JSON array and its index, and not at
// all for anything else: gjson's ForEach would walk an object's members as
// if they were elements.
func elems(v gjson.Result, fn func(i int, e gjson.Result) bool) {
	if !v.IsArray() {
		return
	}
	i := 0
	v.ForEach(func(_, e gjson.Result) bool {
		ok := fn(i, e)
		i++
		return ok
	})
}

// members indexes an object's top-level members by name, in one pass.
// Looking them up one by one with Get would scan past a large input or
// choices list again for every lookup.
type members map[string]gjson.Result

func index(obj gjson.Result) members {
	m := members{}
	obj.ForEach(func(k, v gjson.Result) bool {
		if _, seen := m[k.Str]; !seen { // the first of a repeated key, as Get reads it
			m[k.Str] = v
		}
		return true
	})
	return m
}
