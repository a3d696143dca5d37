package prepare

import (
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/pyjson"
	"github.com/nemo-gym-go/gym/internal/pyrand"
)

// Source is where a script's load_dataset reads: a Hub dataset's config
// and split, at a pinned revision when the script pins one.
type Source struct {
	Repo, Config, Split, Revision string
}

// Recipe is gym's port of one NeMo Gym prepare.py that only downloads a
// Hub dataset and reshapes its rows.
type Recipe struct {
	// Script is the prepare_script path benchmark configs give.
	Script string
	// Output is the file the script writes, relative to its Gym root.
	Output string
	// SHA256 are the digests of the script versions ported (NeMo Gym
	// 0.7.0's); a script with another digest is not this recipe.
	SHA256 []string
	Source Source
	// convert is the script's loop body: one output row per dataset row.
	convert func(Row) (pyjson.Object, error)
}

// Ported is the NeMo Gym release whose scripts the recipes reproduce.
const Ported = "nemo-gym 0.7.0"

var recipes = []Recipe{
	questionAnswer("aime24", "HuggingFaceH4/aime_2024", "", "35e171318019b839159f97a52f828351ea223758531ac6604426c287eb874b28"),
	questionAnswer("aime25", "MathArena/aime_2025", "", "b77d66ee97d75690e41f8da418617f6ab78807813d10e9eaf4df0ce90280b595"),
	questionAnswer("aime26", "MathArena/aime_2026", "", "131d816bf9508e5cdb06d1c46975f9cd633f9ce70eaac137e415e3e8fec17783"),
	questionAnswer("hmmt_feb25", "MathArena/hmmt_feb_2025", "", "f6837019722048b8e41370829fce98468ccf29f2e4e841143becdd2608691433"),
	questionAnswer("hmmt_nov25", "MathArena/hmmt_nov_2025", "", "a86a72ba0066de53b0a694bc043c8591d3b0f248b94716e7f014d10befcc24bc"),
	questionAnswer("apex_shortlist", "MathArena/apex-shortlist", "", "8dfec432e0f7db0916520155f9b58060cd6ae347daf77a4d19fb390c2bc55390"),
	questionAnswer("apex25", "MathArena/apex_2025", "ac8a641db12cc87be39e61ea89f2e04c80c5f2e7", "2d3cc21de12399ed026df7b23adba12989d33f61cae569b6b77fc94113c12c15"),
	questionAnswer("arxivmath_0426", "MathArena/arxivmath-0426", "5e58127fba079b6db1c5aef0fee5dc61fc43da8d", "2942e29e04532922f46ce8e84a8f94d32472c058c43f206b66bc39bdeeca064c"),
	questionAnswer("arxivmath_0526", "MathArena/arxivmath-0526", "69f701c7f266bfba235ef302ff9b19093f7455bb", "f1e6793b06462bd7ee3285162e23d5c2800fbff14c6f6d7d199f06fb787ddfd0"),
	questionAnswer("arxivmath_0626", "MathArena/arxivmath-0626", "dca0d771ab20c1b8e8c50d0921bf693f7bfe663d", "9dbc4383b4f53cbace4ce89c55c6320cfbd80a15f33fd6335ed71572066fbc96"),
	{
		Script: "benchmarks/gpqa/prepare.py", Output: "benchmarks/gpqa/data/gpqa_diamond_benchmark.jsonl",
		SHA256:  []string{"150fdf72a87667230453948c637954cb81f4fe689284cb4ea48eedc94bcafdcc"},
		Source:  Source{Repo: "Idavidrein/gpqa", Config: "gpqa_diamond", Split: "train"},
		convert: gpqaRow,
	},
	{
		Script: "benchmarks/mmlu_pro/prepare.py", Output: "benchmarks/mmlu_pro/data/mmlu_pro_benchmark.jsonl",
		SHA256:  []string{"626e06e643557766704b24139c045d78a0e47a66204b21e4d53c300c38c905e2"},
		Source:  Source{Repo: "TIGER-Lab/MMLU-Pro", Config: "default", Split: "test"},
		convert: mmluProRow,
	},
}

// Lookup finds the recipe of a prepare_script path.
func Lookup(script string) (Recipe, bool) {
	for _, r := range recipes {
		if r.Script == script {
			return r, true
		}
	}
	return Recipe{}, false
}

// questionAnswer is the AIME-shaped script: {"question": problem,
// "expected_answer": str(answer)} per row of the train split.
func questionAnswer(name, repo, revision, digest string) Recipe {
	return Recipe{
		Script: "benchmarks/" + name + "/prepare.py",
		Output: "benchmarks/" + name + "/data/" + name + "_benchmark.jsonl",
		SHA256: []string{digest},
		Source: Source{Repo: repo, Config: "default", Split: "train", Revision: revision},
		convert: func(r Row) (pyjson.Object, error) {
			problem, err := r.value("problem")
			if err != nil {
				return nil, err
			}
			answer, err := r.str("answer")
			if err != nil {
				return nil, err
			}
			return pyjson.Object{{Key: "question", Value: problem}, {Key: "expected_answer", Value: answer}}, nil
		},
	}
}

var gpqaLetters = []string{"A", "B", "C", "D"}

// gpqaRow shuffles the four answers with random.Random seeded by the
// question's md5, as the script does, and names the correct letter.
func gpqaRow(r Row) (pyjson.Object, error) {
	question, err := r.text("Question")
	if err != nil {
		return nil, err
	}
	choices := make([]string, 4)
	for i, col := range []string{"Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"} {
		if choices[i], err = r.text(col); err != nil {
			return nil, err
		}
	}
	correct := choices[0]
	sum := md5.Sum([]byte(question))
	rng := pyrand.New(new(big.Int).SetBytes(sum[:]))
	rng.Shuffle(len(choices), func(i, j int) { choices[i], choices[j] = choices[j], choices[i] })
	correctIdx := 0
	for i, c := range choices {
		if c == correct {
			correctIdx = i
			break
		}
	}
	options := make([]any, 4)
	lines := make([]string, 4)
	for i, c := range choices {
		options[i] = pyjson.Object{{Key: gpqaLetters[i], Value: c}}
		lines[i] = gpqaLetters[i] + ": " + c
	}
	optionsText := strings.Join(lines, "\n")
	return pyjson.Object{
		{Key: "question", Value: question},
		{Key: "options_text", Value: optionsText},
		{Key: "problem", Value: question + "\n" + optionsText},
		{Key: "options", Value: options},
		{Key: "expected_answer", Value: gpqaLetters[correctIdx]},
		{Key: "uuid", Value: uuid5URL(question)},
	}, nil
}

// mmluProRow letters up to ten options and seeds the uuid with the
// question and options, as the script does (its questions repeat across
// categories with different options).
func mmluProRow(r Row) (pyjson.Object, error) {
	question, err := r.text("question")
	if err != nil {
		return nil, err
	}
	choices, err := r.texts("options")
	if err != nil {
		return nil, err
	}
	if len(choices) > 10 {
		return nil, fmt.Errorf("column options has %d choices; the script letters at most ten (A–J)", len(choices))
	}
	answer, err := r.value("answer")
	if err != nil {
		return nil, err
	}
	category, err := r.value("category")
	if err != nil {
		return nil, err
	}
	options := make([]any, len(choices))
	lines := make([]string, len(choices))
	for i, c := range choices {
		letter := string(rune('A' + i))
		options[i] = pyjson.Object{{Key: letter, Value: c}}
		lines[i] = letter + ") " + c
	}
	optionsText := strings.Join(lines, "\n")
	seed, err := pyjson.Dumps(pyjson.Object{{Key: "question", Value: question}, {Key: "options", Value: choices}}, true)
	if err != nil {
		return nil, err
	}
	return pyjson.Object{
		{Key: "question", Value: question},
		{Key: "options_text", Value: optionsText},
		{Key: "problem", Value: strings.Trim(question, "\n") + "\n\n" + optionsText},
		{Key: "options", Value: options},
		{Key: "expected_answer", Value: answer},
		{Key: "category", Value: category},
		{Key: "uuid", Value: uuid5URL(string(seed))},
	}, nil
}

// uuid5URL is str(uuid.uuid5(uuid.NAMESPACE_URL, name)).
func uuid5URL(name string) string {
	namespaceURL := []byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	h := sha1.New()
	h.Write(namespaceURL)
	h.Write([]byte(name))
	u := h.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u)
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// value is row[col]: a missing column is the KeyError the script raises.
func (r Row) value(col string) (any, error) {
	v, ok := r[col]
	if !ok {
		return nil, fmt.Errorf("no column %q (the dataset has %s)", col, r.columns())
	}
	if _, isBytes := v.([]byte); isBytes {
		return nil, fmt.Errorf("column %q holds bytes, which the script's json.dumps cannot write", col)
	}
	return v, nil
}

// text is a string column the script uses as a str (encodes, formats,
// concatenates); anything else fails there.
func (r Row) text(col string) (string, error) {
	v, err := r.value(col)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("column %q is %s, not a string", col, pyType(v))
	}
	return s, nil
}

func (r Row) texts(col string) ([]string, error) {
	v, err := r.value(col)
	if err != nil {
		return nil, err
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("column %q is %s, not a list of strings", col, pyType(v))
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("column %q item %d is %s, not a string", col, i, pyType(it))
		}
		out[i] = s
	}
	return out, nil
}

// str is Python's str(row[col]) for a scalar.
func (r Row) str(col string) (string, error) {
	v, err := r.value(col)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case nil:
		return "None", nil
	case bool:
		if v {
			return "True", nil
		}
		return "False", nil
	case string:
		return v, nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float32:
		return string(pyjson.AppendFloatRepr(nil, float64(v))), nil
	case float64:
		return string(pyjson.AppendFloatRepr(nil, v)), nil
	}
	return "", fmt.Errorf("column %q is %s; gym reproduces str() of a scalar only", col, pyType(v))
}

func (r Row) columns() string {
	var cols []string
	for c := range r {
		cols = append(cols, strconv.Quote(c))
	}
	if len(cols) == 0 {
		return "no columns"
	}
	slices.Sort(cols)
	return strings.Join(cols, ", ")
}

func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "a bool"
	case string:
		return "a string"
	case int32, int64, uint32, uint64:
		return "an int"
	case float32, float64:
		return "a float"
	case []any:
		return "a list"
	case map[string]any:
		return "a struct"
	case []byte:
		return "bytes"
	}
	return fmt.Sprintf("a %T", v)
}
