package simpleagent

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

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
	canon []string
	// conversation is the episode's input and every item it added.
	conversation []string
	taskID       string
	rolloutID    string
	// resolved is the verifier's verdict for the last turn ("" for none).
	resolved string
	modelRef string // {"type":"responses_api_models","name":...}
	refs     []string
	turns    []*trajectoryTurn
	tools    []string
	gaps     []string
	status   string
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
	return &trajectory{taskID: "unscoped", rolloutID: rolloutID, modelRef: `{"type":"responses_api_models","name":` + jsonString(modelServer) + `}`, status: "completed"}
}

// trajectorySlot is where /run's in-process self-call leaves the episode's
// trajectory, instead of in the response /run would take it out of.
type trajectorySlot struct{ t *trajectory }

type trajectorySlotKey struct{}

func withTrajectorySlot(ctx context.Context, s *trajectorySlot) context.Context {
	return context.WithValue(ctx, trajectorySlotKey{}, s)
}

// handOver leaves t in the slot of the /run ctx belongs to, if any.
func handOver(ctx context.Context, t *trajectory) bool {
	s, ok := ctx.Value(trajectorySlotKey{}).(*trajectorySlot)
	if ok {
		s.t = t
	}
	return ok
}

// name is /run's part: the record named for the row's task and the
// rollout, and the verifier's resolved, when it gave one, on the last
// turn (else a gap says there is none).
func (t *trajectory) name(row gjson.Result, rolloutID string, resolved gjson.Result) {
	t.taskID, t.rolloutID = runTaskID(row), rolloutID
	if (resolved.Type == gjson.True || resolved.Type == gjson.False) && len(t.turns) > 0 {
		t.resolved = resolved.Raw
		return
	}
	t.gaps = append(t.gaps, `{"code":"resolution_unavailable","invocation_id":"root","detail":null}`)
}

// epochSeconds is Python's time.time().
func epochSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// pyFloat and floatText write a float as the collector's orjson does.
func pyFloat(v gjson.Result) string { return floatText(v.Float()) }

func floatText(f float64) string { return string(tree.AppendOrjsonFloat(nil, f)) }

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

// json is the record.
func (t *trajectory) json() string {
	canon := make([]string, len(t.conversation))
	for i := range t.conversation {
		canon[i] = t.canonical(t.conversation, i)
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
		o.set("task_id", jsonString(t.taskID))
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
		if i == len(t.turns)-1 && t.resolved != "" {
			o.set("resolved", t.resolved)
		} else {
			o.set("resolved", "null")
		}
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
	r.set("task_id", jsonString(t.taskID))
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
