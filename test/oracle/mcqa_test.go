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

//go:embed testdata/nemo_gym_mcqa_verify.py
var mcqaVerifyScript []byte

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
	type tcase struct {
		ServerMode *string         `json:"server_mode"`
		Body       json.RawMessage `json:"body"`
	}
	var cases []tcase
	var lines []string
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
		c := tcase{Body: json.RawMessage(body + "}")}
		if r.IntN(4) == 0 {
			m := "lenient_answer_colon_md"
			c.ServerMode = &m
		}
		b, _ := json.Marshal(c)
		cases, lines = append(cases, c), append(lines, string(b))
	}
	theirs := e.runScript(t, "mcqa", mcqaVerifyScript, map[string][]byte{"mcqa-cases.jsonl": []byte(strings.Join(lines, "\n") + "\n")}, "mcqa-nemo.jsonl",
		"mcqa-cases.jsonl", "mcqa-nemo.jsonl")
	agreed, extracted, rewarded := 0, 0, 0
	var differ []string
	for i, c := range cases {
		var want struct {
			Reward    float64 `json:"reward"`
			Extracted *string `json:"extracted"`
			Error     string  `json:"error"`
		}
		json.Unmarshal([]byte(theirs[i]), &want)
		s := srv
		if c.ServerMode != nil {
			s = md
		}
		status, out := s.Post("/verify", c.Body)
		var got struct {
			Reward    float64 `json:"reward"`
			Extracted *string `json:"extracted_answer"`
		}
		json.Unmarshal(out, &got)
		same := want.Error == "" && status == 200 && got.Reward == want.Reward && (got.Extracted == nil) == (want.Extracted == nil) &&
			(got.Extracted == nil || *got.Extracted == *want.Extracted)
		if same {
			agreed++
			if want.Extracted != nil {
				extracted++
			}
			if want.Reward == 1 {
				rewarded++
			}
			continue
		}
		differ = append(differ, lines[i]+"\t"+theirs[i]+"\t"+string(out))
		if len(differ) <= 10 {
			t.Errorf("case %s:\nNeMo Gym: %s\ngym:      %d %s", lines[i], theirs[i], status, out)
		}
	}
	t.Logf("mcqa: %d of %d generated answers scored as NeMo Gym scores them (%d with an answer extracted, %d rewarded)", agreed, len(cases), extracted, rewarded)
	if extracted < len(cases)/5 || rewarded == 0 {
		t.Errorf("the generated answers do not exercise extraction: %d extracted, %d rewarded", extracted, rewarded)
	}
	if len(differ) > 0 {
		os.WriteFile(filepath.Join(e.tmp, "mcqa-differ.tsv"), []byte(strings.Join(differ, "\n")+"\n"), 0o644)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
