package pyyaml

import (
	"regexp"
	"strings"
	"unicode"
)

// YAML 1.1 tags in PyYAML's long form, which is also how PyYAML names them
// in error messages.
const (
	tagPrefix    = "tag:yaml.org,2002:"
	tagNull      = tagPrefix + "null"
	tagBool      = tagPrefix + "bool"
	tagInt       = tagPrefix + "int"
	tagFloat     = tagPrefix + "float"
	tagStr       = tagPrefix + "str"
	tagMerge     = tagPrefix + "merge"
	tagValue     = tagPrefix + "value"
	tagTimestamp = tagPrefix + "timestamp"
	tagYAML      = tagPrefix + "yaml"
	tagSeq       = tagPrefix + "seq"
	tagMap       = tagPrefix + "map"
)

// The implicit resolvers of PyYAML 6.0.3's Resolver, written without re.X
// whitespace. Python's `$` also matches before one trailing newline; see
// pyMatch.
var (
	reBool = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	reInt  = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	// reFloatDump is the stock float resolver, used when dumping.
	reFloatDump = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	// reFloatLoad is the resolver OmegaConf's loader appends after the stock
	// one. It accepts everything the stock one does (and `1e3`), so testing
	// it alone gives the same answer as PyYAML trying both.
	reFloatLoad = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	reMerge     = regexp.MustCompile(`^(?:<<)$`)
	reNull      = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
	reTimestamp = regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`)
	reValue     = regexp.MustCompile(`^(?:=)$`)
	reYAML      = regexp.MustCompile(`^(?:!|&|\*)$`)
)

type resolver struct {
	tag   string
	re    *regexp.Regexp
	first string // the first characters PyYAML registers the resolver for
}

// Resolver order matters only where PyYAML tries several for one first
// character; these lists keep PyYAML's registration order.
var (
	loadResolvers = byFirst([]resolver{
		{tagBool, reBool, "yYnNtTfFoO"}, {tagFloat, reFloatLoad, "-+0123456789."}, {tagInt, reInt, "-+0123456789"},
		{tagMerge, reMerge, "<"}, {tagNull, reNull, "~nN"}, {tagValue, reValue, "="},
	})
	dumpResolvers = byFirst([]resolver{
		{tagBool, reBool, "yYnNtTfFoO"}, {tagFloat, reFloatDump, "-+0123456789."}, {tagInt, reInt, "-+0123456789"},
		{tagMerge, reMerge, "<"}, {tagNull, reNull, "~nN"}, {tagTimestamp, reTimestamp, "0123456789"},
		{tagValue, reValue, "="}, {tagYAML, reYAML, "!&*"},
	})
)

// byFirst indexes resolvers by first character, as PyYAML does, so most
// strings are settled without running a pattern.
func byFirst(rs []resolver) map[byte][]resolver {
	m := map[byte][]resolver{}
	for _, r := range rs {
		for i := 0; i < len(r.first); i++ {
			m[r.first[i]] = append(m[r.first[i]], r)
		}
	}
	return m
}

// pyMatch is re.match with a pattern ending in `$`, which in Python also
// matches just before a final newline.
func pyMatch(re *regexp.Regexp, s string) bool {
	return re.MatchString(s) || (strings.HasSuffix(s, "\n") && re.MatchString(s[:len(s)-1]))
}

func resolveWith(rs map[byte][]resolver, s string) string {
	if s == "" {
		return tagNull // the null resolver is the only one registered for ''
	}
	for _, r := range rs[s[0]] {
		if pyMatch(r.re, s) {
			return r.tag
		}
	}
	return tagStr
}

// resolvePlain is the tag OmegaConf's loader gives an untagged plain scalar:
// YAML 1.1 without timestamps, with OmegaConf's wider float.
func resolvePlain(s string) string { return resolveWith(loadResolvers, s) }

// resolveDump is the tag the dumper's resolver (stock YAML 1.1, timestamps
// included) reads s as; a string may be written plain only when this says
// str.
func resolveDump(s string) string { return resolveWith(dumpResolvers, s) }

// yamlIsBool mirrors OmegaConf's YAML_BOOL_TYPES, which unlike the resolver
// includes y and n.
func yamlIsBool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"true", "True", "TRUE", "false", "False", "FALSE",
		"on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return false
}

// pyNumericASCII rewrites s the way CPython prepares a str for int() and
// float(): other Unicode whitespace becomes a space, any Unicode decimal
// digit becomes an ASCII digit, and any other non-ASCII character ends the
// text with '?', which no number parse accepts.
func pyNumericASCII(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < 0x7f
	}
	if ascii {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x7f:
			b.WriteRune(r)
		case isPyUnicodeSpace(r):
			b.WriteByte(' ')
		case unicode.IsDigit(r):
			b.WriteByte('0' + digitValue(r))
		default:
			b.WriteByte('?')
			return b.String()
		}
	}
	return b.String()
}

// digitValue is the value of a Unicode decimal digit. Decimal digits come
// in runs of ten starting at zero, and Go's table ranges start at a run.
func digitValue(r rune) byte {
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return byte((r - rune(rg.Lo)) % 10)
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return byte((r - rune(rg.Lo)) % 10)
		}
	}
	return 0
}

// isPyUnicodeSpace lists the non-ASCII characters for which str.isspace()
// is true.
func isPyUnicodeSpace(r rune) bool {
	switch {
	case r == 0x85, r == 0xa0, r == 0x1680, r >= 0x2000 && r <= 0x200a,
		r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}

// isPySpace is CPython's Py_ISSPACE, the ASCII whitespace int() and float()
// strip from both ends.
func isPySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func trimPySpace(s string) string {
	for len(s) > 0 && isPySpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isPySpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// pyIsInt reports whether Python's int(s) would succeed.
func pyIsInt(s string) bool {
	s = trimPySpace(pyNumericASCII(s))
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" || !isDigit(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch {
		case isDigit(s[i]):
		case s[i] == '_' && i+1 < len(s) && isDigit(s[i+1]):
		default:
			return false
		}
	}
	return true
}

// pyIsFloat reports whether Python's float(s) would succeed.
func pyIsFloat(s string) bool {
	_, ok := pyFloatText(s)
	return ok
}

// pyFloatText checks s against the grammar of Python's float() and returns
// the plain ASCII text Go's ParseFloat reads the same way.
func pyFloatText(s string) (string, bool) {
	s = pyNumericASCII(s)
	if strings.IndexByte(s, '_') >= 0 {
		var ok bool
		if s, ok = stripPyUnderscores(s); !ok {
			return "", false
		}
	}
	s = trimPySpace(s)
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		return s, true
	}
	i, digits := 0, 0
	for i < len(body) && isDigit(body[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(body) && body[i] == '.' {
		i++
		for i < len(body) && isDigit(body[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return "", false
	}
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		i++
		if i < len(body) && (body[i] == '+' || body[i] == '-') {
			i++
		}
		start := i
		for i < len(body) && isDigit(body[i]) {
			i++
		}
		if i == start {
			return "", false
		}
	}
	return s, i == len(body)
}

// stripPyUnderscores applies CPython's rule for underscores in float():
// each must sit between two digits.
func stripPyUnderscores(s string) (string, bool) {
	var b strings.Builder
	var prev byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			if !isDigit(prev) {
				return "", false
			}
		} else {
			if prev == '_' && !isDigit(c) {
				return "", false
			}
			b.WriteByte(c)
		}
		prev = c
	}
	if prev == '_' {
		return "", false
	}
	return b.String(), true
}

// needsQuotes is OmegaConf's str representer test: strings that Python
// would read as a bool, int or float are forced into single quotes.
func needsQuotes(s string) bool {
	return yamlIsBool(s) || pyIsInt(s) || pyIsFloat(s)
}
