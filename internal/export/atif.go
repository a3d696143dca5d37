package export

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
)

// ATIFVersion is the ATIF schema the export writes.
const ATIFVersion = "ATIF-v1.7"

// The ATIF v1.7 document, field for field in the order ATIF defines;
// omitted fields are absent, not null.
type atifTrajectory struct {
	SchemaVersion string         `json:"schema_version"`
	SessionID     string         `json:"session_id"`
	TrajectoryID  string         `json:"trajectory_id"`
	Agent         atifAgent      `json:"agent"`
	Steps         []*atifStep    `json:"steps"`
	FinalMetrics  *atifFinal     `json:"final_metrics,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

type atifAgent struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	ModelName string `json:"model_name,omitempty"`
}

type atifStep struct {
	StepID           int              `json:"step_id"`
	Timestamp        string           `json:"timestamp,omitempty"`
	Source           string           `json:"source"`
	ModelName        string           `json:"model_name,omitempty"`
	Message          any              `json:"message"`
	ReasoningContent *string          `json:"reasoning_content,omitempty"`
	ToolCalls        []atifToolCall   `json:"tool_calls,omitempty"`
	Observation      *atifObservation `json:"observation,omitempty"`
	Metrics          *atifMetrics     `json:"metrics,omitempty"`
	IsCopiedContext  *bool            `json:"is_copied_context,omitempty"`
	LLMCallCount     *int             `json:"llm_call_count,omitempty"`
	Extra            map[string]any   `json:"extra,omitempty"`
}

type atifToolCall struct {
	ToolCallID   string         `json:"tool_call_id"`
	FunctionName string         `json:"function_name"`
	Arguments    map[string]any `json:"arguments"`
	Extra        map[string]any `json:"extra,omitempty"`
}

type atifObservation struct {
	Results []atifResult `json:"results"`
}

type atifResult struct {
	SourceCallID string         `json:"source_call_id,omitempty"`
	Content      any            `json:"content"`
	Extra        map[string]any `json:"extra,omitempty"`
}

type atifMetrics struct {
	PromptTokens     *int64         `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64         `json:"completion_tokens,omitempty"`
	CachedTokens     *int64         `json:"cached_tokens,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

type atifFinal struct {
	TotalPromptTokens     *int64 `json:"total_prompt_tokens,omitempty"`
	TotalCompletionTokens *int64 `json:"total_completion_tokens,omitempty"`
	TotalCachedTokens     *int64 `json:"total_cached_tokens,omitempty"`
	TotalSteps            int    `json:"total_steps"`
}

// ATIFOptions say how rollouts become ATIF trajectories.
type ATIFOptions struct {
	SessionID, AgentVersion, ExporterVersion string
	// Strict refuses what ATIF cannot represent (programmatic tool calling's
	// program and program_output items, a non-null caller, other item types
	// it has no step for) instead of keeping it under extra.
	Strict bool
}

// ATIFError lists every row the export refused; nothing was written.
type ATIFError struct{ Problems []string }

func (e *ATIFError) Error() string {
	return fmt.Sprintf("ATIF export rejected %d row(s):\n- %s", len(e.Problems), strings.Join(e.Problems, "\n- "))
}

// ExportATIF writes one ATIF trajectory per rollout of rolloutsPath into
// the new directory outDir (<task>-<rollout>.json, and manifest.jsonl with
// each file's SHA-256, as NeMo Gym's export writes them). The directory
// appears whole or not at all: every row converts, or none is written.
func ExportATIF(rolloutsPath, outDir string, o ATIFOptions) (int, error) {
	if _, err := os.Lstat(outDir); err == nil {
		return 0, fmt.Errorf("output path already exists: %s", outDir)
	}
	in, err := os.Open(rolloutsPath)
	if err != nil {
		return 0, fmt.Errorf("reading the rollouts: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(outDir), 0o755); err != nil {
		return 0, err
	}
	staging, err := os.MkdirTemp(filepath.Dir(outDir), "."+filepath.Base(outDir)+".tmp-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(staging)
	var problems, manifest []string
	seen := map[[2]int64]int{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		row := sc.Bytes()
		if len(bytes.TrimSpace(row)) == 0 {
			problems = append(problems, fmt.Sprintf("line %d: a blank line is not a rollout", line))
			continue
		}
		if !jsonl.Valid(row) || !gjson.ParseBytes(row).IsObject() {
			problems = append(problems, fmt.Sprintf("line %d: not a JSON object", line))
			continue
		}
		r := gjson.ParseBytes(row)
		task, rollout := r.Get("_ng_task_index"), r.Get("_ng_rollout_index")
		if !isIndex(task) || !isIndex(rollout) {
			problems = append(problems, fmt.Sprintf("line %d: _ng_task_index and _ng_rollout_index must be non-negative integers", line))
			continue
		}
		k := [2]int64{task.Int(), rollout.Int()}
		if first, dup := seen[k]; dup {
			problems = append(problems, fmt.Sprintf("line %d: rollout (%d, %d) is also line %d", line, k[0], k[1], first))
			continue
		}
		seen[k] = line
		doc, rowProblems := convertRollout(r, line, o)
		if len(rowProblems) > 0 {
			problems = append(problems, rowProblems...)
			continue
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			problems = append(problems, fmt.Sprintf("line %d: %v", line, err))
			continue
		}
		name := fmt.Sprintf("%d-%d.json", k[0], k[1])
		if err := os.WriteFile(filepath.Join(staging, name), buf.Bytes(), 0o644); err != nil {
			return 0, err
		}
		sum := sha256.Sum256(buf.Bytes())
		manifest = append(manifest, fmt.Sprintf(`{"_ng_rollout_index":%d,"_ng_task_index":%d,"expected_sha256":"%s","trajectory_path":%q}`, k[1], k[0], hex.EncodeToString(sum[:]), name))
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s line %d: %w", rolloutsPath, line+1, err)
	}
	if len(problems) > 0 {
		return 0, &ATIFError{Problems: problems}
	}
	if len(manifest) == 0 {
		return 0, errors.New("the rollouts file holds no rollouts")
	}
	if err := os.WriteFile(filepath.Join(staging, "manifest.jsonl"), []byte(strings.Join(manifest, "\n")+"\n"), 0o644); err != nil {
		return 0, err
	}
	if err := os.Chmod(staging, 0o755); err != nil {
		return 0, err
	}
	if err := os.Rename(staging, outDir); err != nil {
		return 0, err
	}
	return len(manifest), nil
}

func isIndex(v gjson.Result) bool {
	return v.Type == gjson.Number && v.Num >= 0 && !strings.ContainsAny(v.Raw, ".eE")
}

// converter builds one trajectory.
type converter struct {
	o         ATIFOptions
	line      int
	problems  []string
	steps     []*atifStep
	extra     []map[string]any // what ATIF has no field for, kept in non-strict mode
	reasoning []string         // reasoning items waiting for the agent step they lead to
}

func (c *converter) refuse(at, what string) {
	c.problems = append(c.problems, fmt.Sprintf("line %d: %s: %s", c.line, at, what))
}

// unrepresentable is an item or field ATIF cannot hold: refused in strict
// mode, kept under extra otherwise.
func (c *converter) unrepresentable(at, what string, value gjson.Result) {
	if c.o.Strict {
		c.refuse(at, what+" (ATIF cannot represent it; export without --strict to keep it under extra)")
		return
	}
	c.extra = append(c.extra, map[string]any{"at": at, "reason": what, "value": json.RawMessage(value.Raw)})
}

// add appends a step; an agent step takes the reasoning that led to it.
func (c *converter) add(s *atifStep) *atifStep {
	s.StepID = len(c.steps) + 1
	if s.Source == "agent" && len(c.reasoning) > 0 {
		text := strings.Join(c.reasoning, "\n")
		s.ReasoningContent = &text
		c.reasoning = nil
	}
	c.steps = append(c.steps, s)
	return s
}

func convertRollout(r gjson.Result, line int, o ATIFOptions) (*atifTrajectory, []string) {
	c := &converter{o: o, line: line}
	agentName := r.Get("agent_ref.name").String()
	if agentName == "" {
		agentName = r.Get("_ng_environment_server").String()
	}
	if agentName == "" {
		c.refuse("agent_ref.name", "the rollout names no agent")
	}
	input := r.Get("responses_create_params.input")
	switch {
	case input.Type == gjson.String:
		c.add(&atifStep{Source: "user", Message: input.Str})
	case input.IsArray():
		for i, item := range input.Array() {
			c.item(item, fmt.Sprintf("responses_create_params.input[%d]", i), true)
		}
	}
	for i, item := range r.Get("response.output").Array() {
		c.item(item, fmt.Sprintf("response.output[%d]", i), false)
	}
	if len(c.reasoning) > 0 {
		c.add(&atifStep{Source: "agent", Message: ""})
	}
	c.metrics(r)
	model := r.Get("response.model").String()
	doc := &atifTrajectory{
		SchemaVersion: ATIFVersion,
		SessionID:     o.SessionID,
		TrajectoryID:  fmt.Sprintf("%s:%d:%d", o.SessionID, r.Get("_ng_task_index").Int(), r.Get("_ng_rollout_index").Int()),
		Agent:         atifAgent{Name: agentName, Version: o.AgentVersion, ModelName: model},
		Steps:         c.steps,
	}
	if len(c.steps) == 0 {
		c.refuse("responses_create_params.input", "the rollout has no messages to make steps of")
	}
	doc.FinalMetrics = finalMetrics(c.steps, r)
	source := map[string]any{"task_index": r.Get("_ng_task_index").Int(), "rollout_index": r.Get("_ng_rollout_index").Int()}
	if key := r.Get("ng_model_call_capture.rollout_id"); key.Exists() {
		source["rollout_id"] = key.Str
	}
	meta := map[string]any{"exporter": map[string]any{"name": "gym", "version": o.ExporterVersion}, "source": source}
	if reward := r.Get("reward"); reward.Exists() {
		meta["reward"] = json.RawMessage(reward.Raw)
	}
	if len(c.extra) > 0 {
		meta["unrepresented"] = c.extra
	}
	doc.Extra = map[string]any{"nemo_gym": meta}
	return doc, c.problems
}

// item turns one Responses item into a step, or into part of the agent
// step it belongs to.
func (c *converter) item(item gjson.Result, at string, context bool) {
	typ := item.Get("type").String()
	if typ == "" && item.Get("role").Exists() {
		typ = "message"
	}
	copied := func(s *atifStep) *atifStep {
		if context {
			t := true
			s.IsCopiedContext = &t
		}
		return s
	}
	switch typ {
	case "message":
		role := item.Get("role").String()
		text := c.text(item.Get("content"), at+".content")
		switch role {
		case "user":
			c.add(&atifStep{Source: "user", Message: text})
		case "system", "developer":
			s := c.add(&atifStep{Source: "system", Message: text})
			if role == "developer" {
				s.Extra = map[string]any{"nemo_gym": map[string]any{"role": "developer"}}
			}
		case "assistant", "":
			s := copied(c.add(&atifStep{Source: "agent", Message: text}))
			if id := item.Get("id").String(); id != "" {
				s.Extra = map[string]any{"nemo_gym": map[string]any{"source_item_id": id}}
			}
		default:
			c.refuse(at+".role", fmt.Sprintf("role %q has no ATIF source", role))
		}
	case "reasoning":
		var parts []string
		for _, field := range []string{"summary", "content"} {
			for _, p := range item.Get(field).Array() {
				if t := p.Get("text").String(); t != "" {
					parts = append(parts, t)
				}
			}
		}
		if item.Get("encrypted_content").Type == gjson.String {
			c.unrepresentable(at+".encrypted_content", "encrypted reasoning", item.Get("encrypted_content"))
		}
		c.reasoning = append(c.reasoning, parts...)
	case "function_call":
		s := c.agentStepForCall(context)
		if caller := item.Get("caller"); caller.Exists() && caller.Type != gjson.Null {
			c.unrepresentable(at+".caller", "a tool call issued by a program (caller is not null)", caller)
		}
		var args map[string]any
		if raw := item.Get("arguments"); raw.Type == gjson.String {
			if err := json.Unmarshal([]byte(raw.Str), &args); err != nil || args == nil {
				c.unrepresentable(at+".arguments", "arguments that are not a JSON object", raw)
			}
		}
		if args == nil {
			args = map[string]any{}
		}
		tc := atifToolCall{ToolCallID: item.Get("call_id").String(), FunctionName: item.Get("name").String(), Arguments: args}
		if tc.ToolCallID == "" {
			c.refuse(at+".call_id", "a tool call without a call_id")
		}
		if id := item.Get("id").String(); id != "" {
			tc.Extra = map[string]any{"nemo_gym": map[string]any{"source_item_id": id}}
		}
		s.ToolCalls = append(s.ToolCalls, tc)
	case "function_call_output":
		call := item.Get("call_id").String()
		s := c.stepWithCall(call)
		if s == nil {
			c.refuse(at+".call_id", fmt.Sprintf("a tool result for call %q, which no earlier tool call made", call))
			return
		}
		if caller := item.Get("caller"); caller.Exists() && caller.Type != gjson.Null {
			c.unrepresentable(at+".caller", "a tool result for a program (caller is not null)", caller)
		}
		out := item.Get("output")
		var content any = out.Str
		switch {
		case out.IsArray():
			content = c.text(out, at+".output")
		case out.Type != gjson.String:
			c.unrepresentable(at+".output", "a tool result that is neither text nor content parts", out)
			content = out.Raw
		}
		if s.Observation == nil {
			s.Observation = &atifObservation{}
		}
		s.Observation.Results = append(s.Observation.Results, atifResult{SourceCallID: call, Content: content})
	case "program", "program_output":
		c.unrepresentable(at, "a "+typ+" item of programmatic tool calling", item)
	default:
		c.unrepresentable(at, fmt.Sprintf("a %q item, which has no ATIF step", typ), item)
	}
}

// agentStepForCall is the agent step a tool call joins: the last one
// while it holds tool calls without results yet, otherwise a new one.
func (c *converter) agentStepForCall(context bool) *atifStep {
	if n := len(c.steps); n > 0 && len(c.reasoning) == 0 {
		last := c.steps[n-1]
		if last.Source == "agent" && len(last.ToolCalls) > 0 && last.Observation == nil && (last.IsCopiedContext != nil) == context {
			return last
		}
	}
	s := c.add(&atifStep{Source: "agent", Message: ""})
	if context {
		t := true
		s.IsCopiedContext = &t
	}
	return s
}

func (c *converter) stepWithCall(id string) *atifStep {
	for i := len(c.steps) - 1; i >= 0; i-- {
		for _, tc := range c.steps[i].ToolCalls {
			if tc.ToolCallID == id {
				return c.steps[i]
			}
		}
	}
	return nil
}

// text is a message's content: a string, or text parts as ATIF's text
// content parts; parts ATIF has no text for are kept under extra.
func (c *converter) text(content gjson.Result, at string) any {
	if content.Type == gjson.String {
		return content.Str
	}
	var parts []map[string]any
	for i, p := range content.Array() {
		switch p.Get("type").String() {
		case "input_text", "output_text", "text":
			parts = append(parts, map[string]any{"type": "text", "text": p.Get("text").String()})
			if ann := p.Get("annotations"); ann.IsArray() && len(ann.Array()) > 0 {
				c.unrepresentable(fmt.Sprintf("%s[%d].annotations", at, i), "annotations", ann)
			}
		case "refusal":
			parts = append(parts, map[string]any{"type": "text", "text": p.Get("refusal").String()})
		default:
			c.unrepresentable(fmt.Sprintf("%s[%d]", at, i), fmt.Sprintf("a %q content part", p.Get("type").String()), p)
		}
	}
	if len(parts) == 1 {
		return parts[0]["text"]
	}
	if parts == nil {
		return ""
	}
	return parts
}

// metrics puts each captured policy call's usage and time on the agent
// step its answer began; calls no step comes from (a judge's) are kept
// under extra.
func (c *converter) metrics(r gjson.Result) {
	calls := r.Get("ng_trajectory.model_calls").Array()
	stepOf := map[string]*atifStep{}
	for _, s := range c.steps {
		if s.Extra != nil {
			if ng, ok := s.Extra["nemo_gym"].(map[string]any); ok {
				if id, ok := ng["source_item_id"].(string); ok {
					stepOf[id] = s
				}
			}
		}
		for _, tc := range s.ToolCalls {
			if ng, ok := tc.Extra["nemo_gym"].(map[string]any); ok {
				if id, ok := ng["source_item_id"].(string); ok {
					stepOf[id] = s
				}
			}
		}
	}
	var unmatched []any
	for _, call := range calls {
		var step *atifStep
		for _, out := range call.Get("response.output").Array() {
			if s := stepOf[out.Get("id").String()]; s != nil && s.IsCopiedContext == nil {
				step = s
				break
			}
		}
		if step == nil || step.Metrics != nil {
			unmatched = append(unmatched, json.RawMessage(call.Get("token_stats").Raw))
			continue
		}
		one := 1
		step.LLMCallCount = &one
		step.ModelName = call.Get("response_metadata.model").String()
		if ts := call.Get("started_at"); ts.Type == gjson.Number {
			step.Timestamp = isoTime(ts.Num)
		}
		stats := call.Get("token_stats")
		m := &atifMetrics{PromptTokens: optInt(stats.Get("prompt_tokens")), CompletionTokens: optInt(stats.Get("completion_tokens")), CachedTokens: optInt(stats.Get("cached_tokens"))}
		extra := map[string]any{}
		if v := optInt(stats.Get("reasoning_tokens")); v != nil {
			extra["reasoning_tokens"] = *v
		}
		if v := optInt(stats.Get("total_tokens")); v != nil {
			extra["total_tokens"] = *v
		}
		if len(extra) > 0 {
			m.Extra = extra
		}
		if m.PromptTokens != nil || m.CompletionTokens != nil || m.CachedTokens != nil || m.Extra != nil {
			step.Metrics = m
		}
	}
	if len(unmatched) > 0 {
		c.extra = append(c.extra, map[string]any{"at": "ng_trajectory.model_calls", "reason": "model calls no step came from (a judge's, say): their token stats", "value": unmatched})
	}
}

func optInt(v gjson.Result) *int64 {
	if v.Type != gjson.Number || strings.ContainsAny(v.Raw, ".eE") {
		return nil
	}
	n := v.Int()
	return &n
}

func isoTime(epoch float64) string {
	sec := int64(epoch)
	t := time.Unix(sec, int64((epoch-float64(sec))*1e9)).UTC()
	return t.Format("2006-01-02T15:04:05.000000Z")
}

// finalMetrics sums the steps' metrics; without captured calls, the
// rollout's own usage (the agent's sum over its calls) gives the totals.
func finalMetrics(steps []*atifStep, r gjson.Result) *atifFinal {
	f := &atifFinal{TotalSteps: len(steps)}
	var prompt, completion, cached int64
	var withMetrics int
	for _, s := range steps {
		if s.Metrics == nil {
			continue
		}
		withMetrics++
		if s.Metrics.PromptTokens != nil {
			prompt += *s.Metrics.PromptTokens
		}
		if s.Metrics.CompletionTokens != nil {
			completion += *s.Metrics.CompletionTokens
		}
		if s.Metrics.CachedTokens != nil {
			cached += *s.Metrics.CachedTokens
		}
	}
	if withMetrics > 0 {
		f.TotalPromptTokens, f.TotalCompletionTokens, f.TotalCachedTokens = &prompt, &completion, &cached
		return f
	}
	usage := r.Get("response.usage")
	f.TotalPromptTokens = optInt(usage.Get("input_tokens"))
	f.TotalCompletionTokens = optInt(usage.Get("output_tokens"))
	f.TotalCachedTokens = optInt(usage.Get("input_tokens_details.cached_tokens"))
	return f
}
