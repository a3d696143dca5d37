// Package mcqa is NeMo Gym's multiple-choice QA resources server in Go
// (GPQA, MMLU, MMLU-Pro and the like). It reads the chosen option letter
// out of the model's answer with a row's template regexes or one of four
// grading modes, and rewards 1.0 when it is the expected letter.
package mcqa

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/pyre"
	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind and ClassName as NeMo Gym names them.
const (
	Kind      = "resources_servers/mcqa"
	ClassName = "MCQAResourcesServer"
)

// Grading modes. A row may name the first three; the server config may
// name any of them, and overrides the row.
const (
	StrictSingleLetterBoxed = "strict_single_letter_boxed"
	LenientBoxed            = "lenient_boxed"
	LenientAnswerColon      = "lenient_answer_colon"
	LenientAnswerColonMD    = "lenient_answer_colon_md"
)

var (
	rowModes    = []string{StrictSingleLetterBoxed, LenientBoxed, LenientAnswerColon}
	serverModes = []string{StrictSingleLetterBoxed, LenientBoxed, LenientAnswerColon, LenientAnswerColonMD}
)

func init() {
	server.Register(Kind, ClassName, New, "grading_mode")
}

var fields = []resources.FieldSpec{
	{Name: "uuid", Kind: resources.String, Nullable: true},
	{Name: "options", Kind: resources.List, Items: resources.Object, Nullable: true},
	{Name: "expected_answer", Kind: resources.String, Nullable: true},
	{Name: "metadata", Kind: resources.Object, Nullable: true},
	{Name: "grading_mode", Kind: resources.String, Enum: rowModes, Default: json.RawMessage(`"` + StrictSingleLetterBoxed + `"`)},
	{Name: "template_metadata", Kind: resources.Object, Nullable: true},
}

// New builds the server's handler; the config's grading_mode, when set,
// applies to every row.
func New(rt *server.Runtime) (http.Handler, error) {
	mode, err := resources.Config{Instance: rt.Instance, Node: rt.Config}.Enum("grading_mode", serverModes)
	if err != nil {
		return nil, err
	}
	g := &grader{mode: mode}
	return resources.NewHandler(rt, resources.Options{
		Verify:       g.verify,
		Fields:       fields,
		ReverifyMode: resources.ReverifyStateless,
		Metrics:      resources.MetricsHooks{ComputeMetrics: computeMetrics, KeyMetrics: keyMetrics},
	})
}

type grader struct{ mode string }

func (g *grader) verify(_ context.Context, req *resources.VerifyRequest) (*resources.Verdict, error) {
	opts, err := parseOptions(req.Field("options"))
	if err != nil {
		return nil, err
	}
	q := Question{Options: opts, TemplateMetadata: req.Field("template_metadata")}
	mode := g.mode
	if mode == "" {
		mode = req.String("grading_mode")
	}
	gold := strings.ToUpper(resources.PyStrip(req.String("expected_answer")))
	pred := q.Extract(req.OutputText(), mode)
	reward := 0.0
	var extracted any // null
	if pred != "" {
		extracted = pred
		if pred == gold {
			reward = 1
		}
	}
	return &resources.Verdict{Reward: reward, Fields: []resources.Field{
		{Name: "expected_answer", Value: gold},
		{Name: "extracted_answer", Value: extracted},
	}}, nil
}

// Option is one key of an options entry: a letter and its text (nil for a
// null value, which does not count as a choice).
type Option struct {
	Key  string
	Text *string
}

// parseOptions reads options, a list of objects of strings or nulls,
// keeping each object's key order (it decides ties upstream).
func parseOptions(raw json.RawMessage) ([][]Option, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	var out [][]Option
	var bad error
	gjson.ParseBytes(raw).ForEach(func(i, entry gjson.Result) bool {
		var e []Option
		entry.ForEach(func(k, v gjson.Result) bool {
			switch v.Type {
			case gjson.Null:
				e = append(e, Option{Key: k.Str})
			case gjson.String:
				text := v.Str
				e = append(e, Option{Key: k.Str, Text: &text})
			default:
				bad = resources.ValidationFailed("string_type", []any{"body", "options", int(i.Int()), k.Str}, "Input should be a valid string", json.RawMessage(v.Raw))
				return false
			}
			return true
		})
		out = append(out, e)
		return bad == nil
	})
	return out, bad
}

// Question is what grading needs of a row.
type Question struct {
	Options          [][]Option
	TemplateMetadata json.RawMessage // {"output_regex": str | [str], "answer_prefix": str}, or nil
}

// Extract returns the answer letter the model chose under mode, or "".
func (q Question) Extract(outputText, mode string) string {
	text := resources.PyStrip(outputText)
	if text == "" {
		return ""
	}
	allowed := q.allowed()
	tm := gjson.ParseBytes(q.TemplateMetadata)
	if tm.IsObject() {
		if re := tm.Get("output_regex"); re.Exists() {
			if pred := q.customRegexes(text, re, allowed); pred != "" {
				return pred
			}
		}
	}
	switch mode {
	case StrictSingleLetterBoxed:
		return strictBoxed(text, allowed)
	case LenientBoxed:
		if pred := strictBoxed(text, allowed); pred != "" {
			return pred
		}
		return q.matchBoxedOptionText(text, allowed)
	case LenientAnswerColon:
		return q.answerColon(text, allowed)
	case LenientAnswerColonMD:
		prefix := tm.Get("answer_prefix").Str
		if pred := fromAnswerPayloads(text, allowed, prefix); pred != "" {
			return pred
		}
		if prefix != "" {
			return strictBoxed(text, allowed)
		}
	}
	return ""
}

// allowed is the set of upper-cased single-letter keys with a non-null
// option text.
func (q Question) allowed() map[string]bool {
	letters := map[string]bool{}
	for _, e := range q.Options {
		for _, o := range e {
			if r, n := utf8.DecodeRuneInString(o.Key); n == len(o.Key) && n > 0 && unicode.IsLetter(r) && o.Text != nil {
				letters[strings.ToUpper(o.Key)] = true
			}
		}
	}
	return letters
}

// customRegexes tries the row's regexes in order. The last match of a
// regex (re.findall, case-insensitive) wins; a single letter is trusted
// even when it is not an option, anything else must equal an option's
// text. The regexes are Python's (internal/pyre); one Python refuses
// matches nothing, as upstream, and so does one whose match runs too long.
func (q Question) customRegexes(text string, patterns gjson.Result, allowed map[string]bool) string {
	var list []string
	switch {
	case patterns.Type == gjson.String:
		list = []string{patterns.Str}
	case patterns.IsArray():
		for _, p := range patterns.Array() {
			if p.Type == gjson.String {
				list = append(list, p.Str)
			}
		}
	}
	for _, p := range list {
		re, err := pyre.Compile(p, pyre.IgnoreCase)
		if err != nil {
			continue
		}
		matches, err := re.FindAll(text)
		if err != nil || len(matches) == 0 {
			continue
		}
		captured := strings.ToUpper(normalizeExtracted(resources.PyStrip(matches[len(matches)-1])))
		if r, n := utf8.DecodeRuneInString(captured); n == len(captured) && n > 0 && unicode.IsLetter(r) {
			return captured
		}
		want := normalizeForMatch(captured)
		for _, e := range q.Options {
			for _, o := range e {
				if o.Text != nil && allowed[strings.ToUpper(o.Key)] && normalizeForMatch(*o.Text) == want {
					return strings.ToUpper(o.Key)
				}
			}
		}
	}
	return ""
}

var (
	boxedLetterOnly  = regexp.MustCompile(`^[^A-Za-z]*([A-Z])[^A-Za-z]*$`)
	boxedLetterLabel = regexp.MustCompile(`^` + resources.PySpaceClass + `*([A-Z])` + resources.PySpaceClass + `*[:).\-]`)
	textWrapper      = regexp.MustCompile(`(?s)^\\text\{` + resources.PySpaceClass + `*(.*?)` + resources.PySpaceClass + `*\}$`)
	answerColon      = regexp.MustCompile(`(?i)answer` + resources.PySpaceClass + `*:` + resources.PySpaceClass + `*(.+)`)
	answerPayload    = regexp.MustCompile(`(?im)[*_]{0,2}Answer[*_]{0,2}` + resources.PySpaceClass + `*:(?:[*_]|` + resources.PySpaceClass + `){0,2}(.+)`)
	choiceSeparator  = regexp.MustCompile(`(?i)^(?:` + resources.PySpaceClass + `*[/|&,;]` + resources.PySpaceClass + `*|` + resources.PySpaceClass + `+(?:or|and)` + resources.PySpaceClass + `+|` + resources.PySpaceClass + `+)$`)
)

// strictBoxed reads the letter in the last \boxed{...}: a lone capital
// ("B", "(B)", "[C]"), possibly in \text{}, or a capital followed by a
// label delimiter ("E: option text", "C) ..."); it must be an option.
func strictBoxed(text string, allowed map[string]bool) string {
	inner, ok := lastBoxedInner(text)
	if !ok {
		return ""
	}
	inner = stripTextWrappers(resources.PyStrip(inner))
	m := boxedLetterOnly.FindStringSubmatch(inner)
	if m == nil {
		m = boxedLetterLabel.FindStringSubmatch(inner)
	}
	if m == nil || !allowed[m[1]] {
		return ""
	}
	return m[1]
}

// lastBoxedInner is everything inside the last \boxed{...}, braces counted
// so that \boxed{\text{E}} keeps its inner braces; false when the box is
// never closed.
func lastBoxedInner(text string) (string, bool) {
	const marker = `\boxed{`
	start := strings.LastIndex(text, marker)
	if start < 0 {
		return "", false
	}
	depth := 1
	body := text[start+len(marker):]
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return body[:i], true
			}
		}
	}
	return "", false
}

// stripTextWrappers removes \text{...} wrappers that span the whole string.
func stripTextWrappers(s string) string {
	for {
		m := textWrapper.FindStringSubmatch(s)
		if m == nil {
			return s
		}
		s = m[1]
	}
}

// normalizeForMatch lower-cases and collapses white space, for comparing
// answers with option texts.
func normalizeForMatch(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), resources.IsPySpace), " ")
}

// matchBoxedOptionText finds the option whose text is inside the last box;
// exactly one option must match.
func (q Question) matchBoxedOptionText(text string, allowed map[string]bool) string {
	inner, ok := lastBoxedInner(text)
	if !ok {
		return ""
	}
	inner = resources.PyStrip(inner)
	candidates := []string{normalizeForMatch(inner), normalizeForMatch(stripTextWrappers(inner))}
	matched := map[string]bool{}
	for _, e := range q.Options {
		for _, o := range e {
			if o.Text == nil || utf8.RuneCountInString(o.Key) != 1 || !allowed[strings.ToUpper(o.Key)] {
				continue
			}
			opt := normalizeForMatch(*o.Text)
			for _, c := range candidates {
				if opt != "" && strings.Contains(c, opt) {
					matched[strings.ToUpper(o.Key)] = true
				}
			}
		}
	}
	if len(matched) != 1 {
		return ""
	}
	for l := range matched {
		return l
	}
	return ""
}

// answerColon reads the first "Answer: X" line: a single letter that is an
// option, or an option's exact text.
func (q Question) answerColon(text string, allowed map[string]bool) string {
	m := answerColon.FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	candidate := resources.PyStrip(stripTextWrappers(m[1]))
	if r, n := utf8.DecodeRuneInString(candidate); n == len(candidate) && n > 0 && unicode.IsLetter(r) {
		if up := strings.ToUpper(candidate); allowed[up] {
			return up
		}
	}
	want := normalizeForMatch(candidate)
	for _, e := range q.Options {
		for _, o := range e {
			if up := strings.ToUpper(o.Key); allowed[up] && o.Text != nil && normalizeForMatch(*o.Text) == want {
				return up
			}
		}
	}
	return ""
}

// fromAnswerPayloads reads "Answer: ..." lines (markdown emphasis allowed)
// and, when the row names one, lines after its answer prefix, last first;
// the first that yields an unambiguous option letter wins.
func fromAnswerPayloads(text string, allowed map[string]bool, prefix string) string {
	payloads := answerPayloads(text, prefix)
	for i := len(payloads) - 1; i >= 0; i-- {
		if pred := extractChoiceLetter(payloads[i], allowed); pred != "" {
			return pred
		}
	}
	return ""
}

func answerPayloads(text, prefix string) []string {
	text = nfkcLite(text)
	type payload struct {
		start int
		text  string
	}
	var found []payload
	for _, m := range answerPayload.FindAllStringSubmatchIndex(text, -1) {
		found = append(found, payload{m[0], text[m[2]:m[3]]})
	}
	if prefix != "" {
		re, err := regexp.Compile("(?i)" + regexp.QuoteMeta(nfkcLite(prefix)) + resources.PySpaceClass + "*")
		if err == nil {
			for _, m := range re.FindAllStringIndex(text, -1) {
				end := strings.IndexByte(text[m[1]:], '\n')
				if end < 0 {
					end = len(text) - m[1]
				}
				found = append(found, payload{m[0], text[m[1] : m[1]+end]})
			}
		}
	}
	sort.SliceStable(found, func(a, b int) bool { return found[a].start < found[b].start })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.text
	}
	return out
}

// extractChoiceLetter reads one option letter from an answer payload:
// the whole payload when it is one character, else a leading letter not
// followed by a letter or digit ("B because ..."), else the last standalone
// capital. A list of different options ("A or B", "A/B") gives none.
func extractChoiceLetter(payload string, allowed map[string]bool) string {
	candidate := strings.Trim(resources.PyStrip(normalizeExtracted(payload)), "*_` \t\n\r.,;:")
	if ambiguousChoiceList(candidate, allowed) {
		return ""
	}
	var letter string
	if utf8.RuneCountInString(candidate) == 1 {
		letter = candidate
	} else if l := leadingLetter(candidate); l != "" {
		letter = l
	} else {
		letter = lastStandaloneCapital(candidate)
	}
	if up := strings.ToUpper(letter); letter != "" && allowed[up] {
		return up
	}
	return ""
}

func isASCIILetter(c byte) bool { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') }

func leadingLetter(s string) string {
	if s == "" || !isASCIILetter(s[0]) {
		return ""
	}
	if len(s) > 1 && (isASCIILetter(s[1]) || (s[1] >= '0' && s[1] <= '9')) {
		return ""
	}
	return s[:1]
}

// isPyWord is Python's \w for str patterns.
func isPyWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// lastStandaloneCapital is the last A-Z with a word boundary on both sides.
func lastStandaloneCapital(s string) string {
	last := ""
	prev := rune(-1)
	for i, r := range s {
		if r >= 'A' && r <= 'Z' && (prev < 0 || !isPyWord(prev)) {
			next, _ := utf8.DecodeRuneInString(s[i+1:])
			if i+1 == len(s) || !isPyWord(next) {
				last = string(r)
			}
		}
		prev = r
	}
	return last
}

// ambiguousChoiceList reports two different option letters (ASCII letters
// standing alone) next to each other with only a list separator between.
func ambiguousChoiceList(s string, allowed map[string]bool) bool {
	type hit struct {
		letter     string
		start, end int
	}
	var hits []hit
	for i := 0; i < len(s); i++ {
		if !isASCIILetter(s[i]) || (i > 0 && isASCIILetter(s[i-1])) || (i+1 < len(s) && isASCIILetter(s[i+1])) {
			continue
		}
		if up := strings.ToUpper(s[i : i+1]); allowed[up] {
			hits = append(hits, hit{up, i, i + 1})
		}
	}
	for i := 1; i < len(hits); i++ {
		l, r := hits[i-1], hits[i]
		if l.letter != r.letter && choiceSeparator.MatchString(s[l.end:r.start]) {
			return true
		}
	}
	return false
}

// localizedLetters are answer letters of MMMLU-style scripts, read as A-D.
var localizedLetters = strings.NewReplacer(
	"أ", " A", "ب", " B", "ج", " C", "د", " D",
	"অ", " A", "ব", " B", "ড", " C", "ঢ", " D",
	"Ａ", " A", "Ｂ", " B", "Ｃ", " C", "Ｄ", " D",
)

func normalizeExtracted(s string) string {
	return resources.PyStrip(localizedLetters.Replace(nfkcLite(s)))
}

func computeMetrics(tasks resources.Tasks) (*resources.Metrics, error) {
	return resources.PassMajorityMetrics(tasks, resources.RewardAccuracy, "extracted_answer")
}

func keyMetrics(agent *resources.Metrics) *resources.Metrics {
	key := resources.NewMetrics()
	if v, ok := agent.Get("mean/reward"); ok {
		key.Set("mean/reward", v)
	}
	key.Update(resources.HighestKMetrics(agent, "pass@1[avg-of-{k}]", []string{"accuracy", "no_answer"}, nil))
	key.Update(resources.HighestKMetrics(agent, "pass@{k}", []string{"no_answer"}, nil))
	key.Update(resources.HighestKMetrics(agent, "majority@{k}", []string{"accuracy"}, nil))
	if v, ok := agent.Get("pass@1/accuracy"); ok {
		key.Set("pass@1/accuracy", v)
	}
	return key
}
