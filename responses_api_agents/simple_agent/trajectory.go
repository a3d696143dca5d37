package simpleagent

import (
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// The trajectory NeMo Gym's simple_agent keeps of an episode with
// observability on (TrajectoryRecord): one invocation, a turn per model
// call, each tool call it ran, and what could not be observed. The
// episode's /v1/responses answer carries it as _ng_trajectory (task
// "unscoped"); /run takes it off, names the task and the rollout, marks
// the last turn with the verifier's resolved, and returns it as
// ng_trajectory, which the collector merges with the captured calls.
const (
	responsesTrajectoryKey = "_ng_trajectory"
	runTrajectoryKey       = "ng_trajectory"
)

type trajectory struct {
	// canon are the canonical forms of the episode's items so far, by
	// index: every turn's question repeats the items before it.
	canon     []string
	rolloutID string
	modelRef  string // {"type":"responses_api_models","name":...}
	refs      []string
	turns     []*trajectoryTurn
	tools     []string
	gaps      []string
	status    string
}

type trajectoryTurn struct {
	no        int
	timestamp float64
	question  []string
	answer    []string
	reasoning []string
	steps     int
	ref       string
}

func newTrajectory(rolloutID, modelServer string) *trajectory {
	return &trajectory{rolloutID: rolloutID, modelRef: `{"type":"responses_api_models","name":` + jsonString(modelServer) + `}`, status: "completed"}
}

// epochSeconds is Python's time.time().
func epochSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func pyFloat(v gjson.Result) string { return tree.PythonFloatRepr(v.Float()) }

func floatText(f float64) string { return tree.PythonFloatRepr(f) }

// canonical is items[i] in canonical form, each item dumped once.
func (t *trajectory) canonical(items []string, i int) string {
	for len(t.canon) <= i {
		t.canon = append(t.canon, canonicalItem(items[len(t.canon)]))
	}
	return t.canon[i]
}

// turn records model call step: the request's input (items[:asked]),
// what the model answered (the items after it) and whether the answer
// could be referred to by its response id.
func (t *trajectory) turn(step int, started time.Time, items []string, asked int, resp gjson.Result) {
	tt := &trajectoryTurn{no: step, timestamp: epochSeconds(started), steps: len(t.tools)}
	for i := range asked {
		tt.question = append(tt.question, t.canonical(items, i))
	}
	for i := asked; i < len(items); i++ {
		if gjson.Get(items[i], "type").Str == "reasoning" {
			tt.reasoning = append(tt.reasoning, t.canonical(items, i))
		} else {
			tt.answer = append(tt.answer, t.canonical(items, i))
		}
	}
	if id := resp.Get("id"); id.Type == gjson.String && id.Str != "" {
		tt.ref = `{"model_call_id":null,"model_ref":` + t.modelRef + `,"response_id":` + id.Raw + `}`
		t.refs = append(t.refs, tt.ref)
	} else {
		t.gaps = append(t.gaps, `{"code":"model_call_reference_unavailable","invocation_id":"root","detail":`+jsonString("turn:"+strconv.Itoa(step))+`}`)
	}
	t.turns = append(t.turns, tt)
}

// tool records one tool call the episode ran.
func (t *trajectory) tool(c toolCall, started time.Time, took time.Duration, res toolResult) {
	startedAt := epochSeconds(started)
	completedAt := max(startedAt, epochSeconds(time.Now()))
	var o obj
	o.set("kind", `"tool_call"`)
	o.set("invocation_id", `"root"`)
	o.set("tool_call_id", c.callID)
	o.set("sandbox_id", "null")
	o.set("tool_name", jsonString(c.name))
	o.set("started_at", floatText(startedAt))
	o.set("completed_at", floatText(completedAt))
	o.set("duration_ms", floatText(float64(took)/float64(time.Millisecond)))
	o.set("timing_source", `"executor"`)
	o.set("status", jsonString(res.status))
	if res.errorType != "" {
		o.set("error_type", jsonString(res.errorType))
	} else {
		o.set("error_type", "null")
	}
	o.set("output", jsonString(res.output))
	t.tools = append(t.tools, o.String())
	t.turns[len(t.turns)-1].steps = len(t.tools)
}

// json is the record, its task yet unnamed; conversation is the episode's
// input and every item it added.
func (t *trajectory) json(conversation []string) string {
	canon := make([]string, len(conversation))
	for i := range conversation {
		canon[i] = t.canonical(conversation, i)
	}
	var inv obj
	inv.set("kind", `"agent_invocation"`)
	inv.set("invocation_id", `"root"`)
	inv.set("parent_invocation_id", "null")
	inv.set("spawned_by_tool_call_id", "null")
	inv.set("status", jsonString(t.status))
	inv.set("duration_ms", "null")
	inv.set("error_type", "null")
	inv.set("model_calls", "["+strings.Join(t.refs, ",")+"]")
	inv.set("conversation", "["+strings.Join(canon, ",")+"]")
	turns := make([]string, len(t.turns))
	for i, tt := range t.turns {
		var o obj
		o.set("invocation_id", `"root"`)
		o.set("task_id", `"unscoped"`)
		o.set("rollout_id", jsonString(t.rolloutID))
		o.set("turn_no", strconv.Itoa(tt.no))
		o.set("timestamp", floatText(tt.timestamp))
		o.set("question", "["+strings.Join(tt.question, ",")+"]")
		o.set("answer", "["+strings.Join(tt.answer, ",")+"]")
		if tt.reasoning != nil {
			o.set("reasoning_content", "["+strings.Join(tt.reasoning, ",")+"]")
		} else {
			o.set("reasoning_content", "null")
		}
		o.set("resolved", "null")
		o.set("step_count", strconv.Itoa(tt.steps))
		if tt.ref != "" {
			o.set("model_calls", "["+tt.ref+"]")
		} else {
			o.set("model_calls", "[]")
		}
		turns[i] = o.String()
	}
	var r obj
	r.set("schema_version", `"1.0"`)
	r.set("task_id", `"unscoped"`)
	r.set("rollout_id", jsonString(t.rolloutID))
	r.set("invocations", "["+inv.String()+"]")
	r.set("turns", "["+strings.Join(turns, ",")+"]")
	r.set("model_calls", "[]")
	r.set("tool_calls", "["+strings.Join(t.tools, ",")+"]")
	r.set("gaps", "["+strings.Join(t.gaps, ",")+"]")
	return r.String()
}

// runTaskID is the task /run names the trajectory by: the row's task_id,
// problem_id or instance_id, else its task index, as Python's str().
func runTaskID(row gjson.Result) string {
	for _, k := range []string{"task_id", "problem_id", "instance_id", "_ng_task_index"} {
		v := row.Get(k)
		switch {
		case !v.Exists() || v.Type == gjson.Null:
			continue
		case v.Type == gjson.String:
			return v.Str
		case v.Type == gjson.True:
			return "True"
		case v.Type == gjson.False:
			return "False"
		case v.Type == gjson.Number && strings.ContainsAny(v.Raw, ".eE"):
			return tree.PythonFloatRepr(v.Num)
		}
		return v.Raw
	}
	return "unknown"
}

// finishTrajectory is /run's part: the record from the episode's answer
// named for the row's task and the rollout, and, after verification, the
// verifier's resolved on the last turn (or a gap that there is none).
func finishTrajectory(raw string, row gjson.Result, rolloutID string, verified gjson.Result) (string, error) {
	task := jsonString(runTaskID(row))
	id := jsonString(rolloutID)
	out, err := sjson.SetRaw(raw, "task_id", task)
	if err == nil {
		out, err = sjson.SetRaw(out, "rollout_id", id)
	}
	n := int(gjson.Get(raw, "turns.#").Int())
	for i := 0; i < n && err == nil; i++ {
		p := "turns." + strconv.Itoa(i)
		if out, err = sjson.SetRaw(out, p+".task_id", task); err == nil {
			out, err = sjson.SetRaw(out, p+".rollout_id", id)
		}
	}
	if err != nil {
		return "", err
	}
	if r := verified.Get("resolved"); (r.Type == gjson.True || r.Type == gjson.False) && n > 0 {
		return sjson.SetRaw(out, "turns."+strconv.Itoa(n-1)+".resolved", r.Raw)
	}
	return sjson.SetRaw(out, "gaps.-1", `{"code":"resolution_unavailable","invocation_id":"root","detail":null}`)
}
