package interp

import (
	"strconv"
	"strings"
)

func newRefExpr(dots int, keys []KeyPart, text string) *RefExpr {
	r := &RefExpr{Dots: dots, Keys: keys}
	names := make([]string, len(keys))
	for i, k := range keys {
		if k.Interp != nil {
			return r
		}
		names[i] = k.Name
	}
	ref := r.ref(names, text)
	r.static = &ref
	return r
}

// ref builds the Ref for the given key texts. OmegaConf joins the written
// pieces back into one string and splits that again, so a nested
// interpolation giving ".options" or "a.b" adds dots and path segments.
func (r *RefExpr) ref(names []string, text string) Ref {
	var b strings.Builder
	b.WriteString(strings.Repeat(".", r.Dots))
	for i, k := range r.Keys {
		switch {
		case k.Bracket:
			b.WriteString("[" + names[i] + "]")
		case i > 0:
			b.WriteString("." + names[i])
		default:
			b.WriteString(names[i])
		}
	}
	ref := KeyRef(b.String())
	ref.Text = text
	return ref
}

// KeyRef makes the Ref for a key string the way OmegaConf reads one (as
// oc.select does with its first argument): leading dots make it relative,
// the rest is split on '.' and '[...]'. Text is left empty.
func KeyRef(key string) Ref {
	rest := strings.TrimLeft(key, ".")
	ref := Ref{Key: key, Dots: len(key) - len(rest)}
	if rest != "" {
		ref.Path = splitKey(rest)
		if len(ref.Path) == 0 {
			// A key such as "[" splits to nothing, and OmegaConf then fails
			// (IndexError); a key no config has keeps it from meaning the
			// anchor node.
			ref.Path = []string{""}
		}
	}
	return ref
}

// splitKey is OmegaConf's split_key for a key without leading dots: the
// head up to the first '.' or '[', then each `.name` or `[name]`, skipping
// characters that fit neither as Python's re.findall does.
func splitKey(key string) []string {
	head := strings.IndexAny(key, ".[")
	if head < 0 {
		return []string{key}
	}
	var path []string
	if head > 0 || key[0] != '[' {
		path = append(path, key[:head])
	}
	for i := head; i < len(key); {
		switch key[i] {
		case '.':
			j := i + 1
			for j < len(key) && key[j] != '.' && key[j] != '[' {
				j++
			}
			path = append(path, key[i+1:j])
			i = j
			continue
		case '[':
			// `\[(.*?)\]`: the shortest run to a ']', where '.' does not
			// match a newline.
			if j := strings.IndexAny(key[i+1:], "]\n"); j >= 0 && key[i+1+j] == ']' {
				path = append(path, key[i+1:i+1+j])
				i += j + 2
				continue
			}
		}
		i++
	}
	return path
}

// ParseIndex reads a path segment used on a list as OmegaConf does, with
// Python's int(): surrounding whitespace, a sign and '_' between digits are
// allowed, so "1_0" is 10. ok is false when the segment is not an int;
// range checks, negative indices included, are the caller's.
func ParseIndex(seg string) (idx int, ok bool) {
	s := strings.Trim(seg, " \t\n\r\v\f")
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digitsEnd(digits, 0) != len(digits) {
		return 0, false
	}
	n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
	return n, err == nil
}
