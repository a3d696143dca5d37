package oracle

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
	"github.com/nemo-gym-go/gym/resources_servers/mcqa"
)

//go:embed testdata/nemo_gym_verify.py
var verifyScript []byte

// verifyCase is one generated /verify call: the server's config fields
// (for NeMo Gym's side) and the body.
type verifyCase struct {
	Config map[string]any  `json:"config"`
	Body   json.RawMessage `json:"body"`
}

// differentVerdicts runs cases through NeMo Gym's verify (module, its
// server and request classes) and through gym's (post, by config), and
// returns the verdicts that differ in the reward or one of fields, each
// as the case, NeMo Gym's and gym's answers; generated cases that differ
// are kept in the temp dir as <what>-differ.tsv.
func differentVerdicts(t *testing.T, e *env, what, module, serverClass, requestClass string, fields []string, cases []verifyCase,
	post func(c verifyCase) (int, []byte)) (differ []string, theirs []map[string]json.RawMessage) {
	t.Helper()
	var lines []string
	for _, c := range cases {
		b, _ := json.Marshal(c)
		lines = append(lines, string(b))
	}
	outs := e.runScript(t, what, verifyScript, map[string][]byte{what + "-cases.jsonl": []byte(strings.Join(lines, "\n") + "\n")}, what+"-nemo.jsonl",
		what+"-cases.jsonl", what+"-nemo.jsonl", module, serverClass, requestClass, strings.Join(fields, ","))
	for i, c := range cases {
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(outs[i]), &want); err != nil {
			t.Fatal(err)
		}
		theirs = append(theirs, want)
		status, out := post(c)
		var got map[string]json.RawMessage
		json.Unmarshal(out, &got)
		same := want["error"] == nil && status == 200
		for _, f := range append([]string{"reward"}, fields...) {
			same = same && jsonSame(want[f], got[f])
		}
		if !same {
			differ = append(differ, lines[i]+"\t"+outs[i]+"\t"+string(out))
		}
	}
	if len(differ) > 0 {
		os.WriteFile(filepath.Join(e.tmp, what+"-differ.tsv"), []byte(strings.Join(differ, "\n")+"\n"), 0o644)
		for _, d := range differ[:min(10, len(differ))] {
			t.Errorf("%s verdicts differ (case, NeMo Gym, gym):\n%s", what, d)
		}
	}
	return differ, theirs
}

// jsonSame is whether two JSON values are equal as values (1 and 1.0 too).
func jsonSame(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return len(a) == 0 && len(b) == 0
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// mcqaAnswer is a model answer as models write them: boxed letters and
// option text, answer lines in several spellings, several or no answers,
// truncated ones.
func mcqaAnswer(r *rand.Rand, letters []string, texts []string) string {
	l := letters[r.IntN(len(letters))]
	lo := strings.ToLower(l)
	opt := texts[r.IntN(len(texts))]
	shapes := []string{
		`\boxed{` + l + `}`, `\boxed{ ` + lo + ` }`, `\boxed{\text{` + l + `}}`, `\boxed{(` + l + `)}`, `\boxed{` + l + `: ` + opt + `}`,
		`\boxed{` + opt + `}`, `\boxed{` + l + `} or \boxed{` + letters[0] + `}`, `\boxed{` + l + `, ` + letters[0] + `}`, `\boxed{`,
		"Answer: " + l, "answer:" + lo, "**Answer:** (" + l + ")", "*Answer*: " + opt, "The answer is " + l + ".", "Final answer: " + l + "\nAnswer: " + letters[0],
		"Réponse\u00a0: " + l, "答案：" + l, "I think it's " + l, l, lo + ")", "(" + l + ") " + opt, "", "   ", "None of these", "\\boxed{}",
	}
	s := shapes[r.IntN(len(shapes))]
	if r.IntN(3) == 0 {
		s = "Let me think step by step about " + opt + ". " + s
	}
	if r.IntN(4) == 0 {
		s += " " + shapes[r.IntN(len(shapes))]
	}
	return s
}

// TestMCQAMatchesNeMoGym holds gym's mcqa verify to NeMo Gym's on
// generated answers: the same reward and extracted answer for every
// grading mode, option set and template regex.
func TestMCQAMatchesNeMoGym(t *testing.T) {
	e := setup(t)
	srv := resourcestest.Start(t, "mcqa:\n  resources_servers:\n    mcqa:\n      entrypoint: app.py\n", "mcqa", mcqa.ClassName, mcqa.New)
	md := resourcestest.Start(t, "mcqa:\n  resources_servers:\n    mcqa:\n      entrypoint: app.py\n      grading_mode: lenient_answer_colon_md\n", "mcqa", mcqa.ClassName, mcqa.New)
	r := rand.New(rand.NewPCG(14, 2))
	optionSets := [][]string{{"A", "B", "C", "D"}, {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"}, {"A", "B"}}
	texts := []string{"Paris", "the mitochondria", "42", "None of the above", "x^2 + 1", "Ünïcödé"}
	templates := []string{"", `{"output_regex": "Answer:\\s*([A-J])"}`, `{"output_regex": ["(?<=Final choice: )([A-J])", "\\\\boxed\\{([A-J])\\}"]}`,
		`{"output_regex": "(?i)[Tt]he (?:[Bb]est [Aa]nswer|[Aa]nswer)[^A-B]*([A-B])"}`, `{"answer_prefix": "answer is"}`, `{"output_regex": "(bad"}`}
	modes := []string{"strict_single_letter_boxed", "lenient_boxed", "lenient_answer_colon"}
	var cases []verifyCase
	for i := 0; i < 3000; i++ {
		letters := optionSets[r.IntN(len(optionSets))]
		var opts []string
		for j, l := range letters {
			opts = append(opts, fmt.Sprintf(`{%q:%q}`, l, texts[j%len(texts)]))
		}
		text := mcqaAnswer(r, letters, texts)
		body := fmt.Sprintf(`{"responses_create_params":{"input":"q"},"response":{"id":"r","created_at":0,"model":"m","object":"response","output":[{"id":"msg","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":%s,"annotations":[]}]}],"parallel_tool_calls":false,"tool_choice":"none","tools":[]},"options":[%s],"expected_answer":%q,"grading_mode":%q`,
			quote(text), strings.Join(opts, ","), letters[r.IntN(len(letters))], modes[r.IntN(len(modes))])
		if tm := templates[r.IntN(len(templates))]; tm != "" {
			body += `,"template_metadata":` + tm
		}
		c := verifyCase{Config: map[string]any{"grading_mode": nil}, Body: json.RawMessage(body + "}")}
		if r.IntN(4) == 0 {
			c.Config["grading_mode"] = "lenient_answer_colon_md"
		}
		cases = append(cases, c)
	}
	differ, theirs := differentVerdicts(t, e, "mcqa", "resources_servers.mcqa.app", "MCQAResourcesServer", "MCQAVerifyRequest", []string{"extracted_answer"}, cases,
		func(c verifyCase) (int, []byte) {
			if c.Config["grading_mode"] != nil {
				return md.Post("/verify", c.Body)
			}
			return srv.Post("/verify", c.Body)
		})
	extracted, rewarded := 0, 0
	for _, v := range theirs {
		if string(v["extracted_answer"]) != "null" {
			extracted++
		}
		if jsonSame(v["reward"], json.RawMessage("1")) {
			rewarded++
		}
	}
	t.Logf("mcqa: %d of %d generated answers scored as NeMo Gym scores them (%d with an answer extracted, %d rewarded)", len(cases)-len(differ), len(cases), extracted, rewarded)
	if extracted < len(cases)/5 || rewarded == 0 {
		t.Errorf("the generated answers do not exercise extraction: %d extracted, %d rewarded", extracted, rewarded)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
