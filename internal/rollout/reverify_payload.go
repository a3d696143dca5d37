package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
)

// verifyPayload is the /verify body of a rollout: its materialized input
// with the rollout's response, as NeMo Gym builds it. An input whose
// task_input is an object has it (and its task_data) flattened into the
// row. The artifacts a file-backed or adaptive verifier needs
// (deliverables_dir, reference_ids) come from the rollout; its reward and
// failure bookkeeping do not.
func verifyPayload(input, rollout gjson.Result) ([]byte, error) {
	response := rollout.Get("response")
	if !response.Exists() {
		resultType := rollout.Get("_ng_result_type").Str
		if resultType == "" {
			resultType = "unknown"
		}
		return nil, fmt.Errorf("rollout (task %s, rollout %s) of result type '%s' has no `response`, which reverification needs",
			rollout.Get(TaskIndexKey).Raw, rollout.Get(RolloutIndexKey).Raw, resultType)
	}
	if !input.IsObject() {
		return nil, fmt.Errorf("the materialized input is %s, not a JSON object", jsonl.Excerpt([]byte(input.Raw)))
	}
	o := &orderedObject{}
	taskInput := input.Get("task_input")
	if !taskInput.IsObject() {
		input.ForEach(func(k, v gjson.Result) bool { o.set(k.Str, v.Raw); return true })
	} else {
		input.ForEach(func(k, v gjson.Result) bool {
			if k.Str != "task_id" && k.Str != "task_input" {
				o.set(k.Str, v.Raw)
			}
			return true
		})
		taskData := taskInput.Get("task_data")
		if taskData.Exists() && !taskData.IsObject() {
			return nil, errors.New("task_input.task_data must be an object")
		}
		var conflict error
		taskData.ForEach(func(k, v gjson.Result) bool {
			if f := taskInput.Get(gjsonKey(k.Str)); f.Exists() && k.Str != "task_data" && !sameJSON(f.Raw, v.Raw) {
				conflict = fmt.Errorf("conflicting task field '%s' inside and outside task_data", k.Str)
				return false
			}
			o.set(k.Str, v.Raw)
			return true
		})
		if conflict != nil {
			return nil, conflict
		}
		taskInput.ForEach(func(k, v gjson.Result) bool {
			if k.Str != "task_data" {
				o.set(k.Str, v.Raw)
			}
			return true
		})
	}
	o.set("response", response.Raw)
	for _, k := range []string{"deliverables_dir", "reference_ids"} {
		if v := rollout.Get(k); v.Exists() {
			o.set(k, v.Raw)
		}
	}
	return o.bytes(), nil
}

// gjsonKey escapes a key for a gjson path.
func gjsonKey(k string) string {
	var b strings.Builder
	for _, r := range k {
		if strings.ContainsRune(`.*?|#@\!=<>%`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return reflect.DeepEqual(x, y)
}

// orderedObject builds a JSON object as a Python dict merges: a key set
// again keeps its place and takes the new value.
type orderedObject struct {
	keys []string
	vals map[string]string
}

func (o *orderedObject) set(k, raw string) {
	if o.vals == nil {
		o.vals = map[string]string{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = raw
}

func (o *orderedObject) bytes() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(openai.AppendJSONString(nil, k))
		b.WriteByte(':')
		b.WriteString(o.vals[k])
	}
	b.WriteByte('}')
	var c bytes.Buffer
	if json.Compact(&c, b.Bytes()) != nil {
		return b.Bytes()
	}
	return c.Bytes()
}
