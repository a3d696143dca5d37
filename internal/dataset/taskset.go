package dataset

import (
	"fmt"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// Keys of the collector's identity, kept outside a materialized task.
var identityKeys = []string{"_ng_task_index", "_ng_rollout_index", "_ng_rollout_id", "_ng_attempt_index"}

// checkTasksetRoute is NeMo Gym's resolve_dataset_agent for a dataset that
// declares a taskset: environment_server_routes must send the taskset to
// an Environment Server whose agents exist, the declaring agent among
// them, or whose resources_server is the declaring resources server.
func checkTasksetRoute(cfg *tree.Node, d *Dataset) error {
	ts := d.Taskset
	routes := cfg.Get("environment_server_routes")
	var envName string
	if routes != nil && routes.Kind == tree.Map {
		if n := routes.Get(ts); n != nil && n.Kind == tree.String {
			envName = n.Str
		}
	}
	if envName == "" {
		return &CollateError{fmt.Sprintf("No Environment Server route for taskset '%s'; set environment_server_routes.", ts)}
	}
	env := cfg.Get(envName)
	var servers *tree.Node
	if env != nil && env.Kind == tree.Map {
		servers = env.Get(envType)
	}
	if servers == nil || servers.Kind != tree.Map || servers.Len() != 1 {
		return &CollateError{fmt.Sprintf("Taskset '%s' route '%s' must name an Environment Server.", ts, envName)}
	}
	envCfg := servers.Entries[0].Value
	if envCfg.Kind != tree.Map {
		return &CollateError{fmt.Sprintf("Environment Server '%s' must have a configuration mapping.", envName)}
	}
	var agents []string
	for _, e := range envCfg.Entries {
		ref := e.Value
		if ref.Kind != tree.Map {
			continue
		}
		t := ref.Get("type")
		isRef := (t != nil && t.Kind == tree.String && t.Str == agentsType) || (e.Key == "agent_server" && (t == nil || t.Kind == tree.Null))
		if !isRef {
			continue
		}
		name := ref.Get("name")
		var agent *tree.Node
		if name != nil && name.Kind == tree.String {
			agent = cfg.Get(name.Str)
		}
		if agent == nil || agent.Kind != tree.Map || agent.Get(agentsType) == nil {
			return &CollateError{fmt.Sprintf("Environment Server '%s' references %s, which is not an agent. Its agent_server and other agent references must name agents.", envName, reprName(name))}
		}
		agents = append(agents, name.Str)
	}
	if len(agents) == 0 {
		return &CollateError{fmt.Sprintf("Environment Server '%s' must bind a valid agent_server for this dataset.", envName)}
	}
	if d.Agent != "" {
		return &CollateError{fmt.Sprintf("Taskset '%s' pins agent '%s', but a taskset routes to Environment Server '%s' through environment_server_routes, not to an agent. Remove the `agent` key.", ts, d.Agent, envName)}
	}
	declarer := d.Declarer.name
	if d.Declarer.serverType == agentsType {
		for _, a := range agents {
			if a == declarer {
				return nil
			}
		}
		return &CollateError{fmt.Sprintf("Taskset '%s' must route to its declaring agent '%s'.", ts, declarer)}
	}
	rs := envCfg.Get("resources_server")
	ok := rs != nil && rs.Kind == tree.Map
	if ok {
		name, typ := rs.Get("name"), rs.Get("type")
		ok = name != nil && name.Kind == tree.String && name.Str == declarer &&
			(typ == nil || typ.Kind == tree.Null || (typ.Kind == tree.String && typ.Str == resourcesType))
	}
	if !ok {
		return &CollateError{fmt.Sprintf("Environment Server '%s' must bind declaring resources server '%s' for taskset '%s'.", envName, declarer, ts)}
	}
	return nil
}

func reprName(n *tree.Node) string {
	if n == nil {
		return "None"
	}
	return interp.PythonRepr(n)
}

// materializeTask is NeMo Gym's materialize_task: a flat row becomes
// {task_id: {taskset, task_id}, task_input: the row's task fields}. The
// task's ID is the row's task_id, problem_id or instance_id (as str()
// gives it), else its _ng_task_index, else index (the row's place among
// the source rows of the type).
func materializeTask(row pyjson.Object, taskset string, index int) (pyjson.Object, error) {
	id, hasID := row.Get("task_id")
	_, hasInput := row.Get("task_input")
	if _, isObj := id.(pyjson.Object); hasInput || (hasID && isObj) {
		return nil, fmt.Errorf("Expected a flat dataset row, not an already materialized task")
	}
	taskID, found := "", false
	for _, key := range []string{"task_id", "problem_id", "instance_id"} {
		if v, ok := row.Get(key); ok && v != nil {
			taskID, found = interp.PythonStr(toTree(v)), true
			break
		}
	}
	if !found {
		v, ok := row.Get("_ng_task_index")
		if !ok {
			v = int64(index)
		}
		n, isInt := v.(int64)
		if !isInt || n < 0 {
			return nil, fmt.Errorf("A flat row without a task ID requires a non-negative task_index")
		}
		taskID = fmt.Sprint(n)
	}
	if taskID == "" {
		return nil, fmt.Errorf("task_id must not be empty (TaskId.task_id has at least 1 character)")
	}
	input := pyjson.Object{}
	for _, m := range row {
		switch {
		case m.Key == agentRefKey || m.Key == taskSourceKey || m.Key == "skills_ref" || strings.HasPrefix(m.Key, "_ng_"):
		default:
			input = append(input, m)
		}
	}
	return pyjson.Object{
		{Key: "task_id", Value: pyjson.Object{{Key: "taskset", Value: taskset}, {Key: "task_id", Value: taskID}}},
		{Key: "task_input", Value: input},
	}, nil
}

// toTree is a json.loads value as a config tree node, for Python's str().
func toTree(v any) *tree.Node {
	switch v := v.(type) {
	case nil:
		return tree.NewNull()
	case bool:
		return tree.NewBool(v)
	case int64:
		return tree.NewInt(v)
	case float64:
		return tree.NewFloat(v)
	case string:
		return tree.NewString(v)
	case []any:
		l := tree.NewList()
		for _, it := range v {
			l.Items = append(l.Items, toTree(it))
		}
		return l
	case pyjson.Object:
		m := tree.NewMap()
		for _, mem := range v {
			m.Set(mem.Key, toTree(mem.Value))
		}
		return m
	}
	b, _ := pyjson.Dumps(v, false) // a *big.Int: its digits
	n, err := tree.ParseDecimal(string(b))
	if err != nil {
		return tree.NewString(string(b))
	}
	return n
}

// materializedParts is NeMo Gym's _materialized_task_parts for a row that
// is a materialized task: its taskset, and its task_input, which must be
// an object. ok is false when the row is not a valid one.
func materializedParts(row pyjson.Object) (taskset string, input pyjson.Object, ok bool) {
	idv, _ := row.Get("task_id")
	id := idv.(pyjson.Object)
	if len(id) != 2 {
		return "", nil, false
	}
	ts, _ := id.Get("taskset")
	tid, _ := id.Get("task_id")
	tss, ok1 := ts.(string)
	tids, ok2 := tid.(string)
	if !ok1 || !ok2 || tss == "" || tids == "" {
		return "", nil, false
	}
	in, _ := row.Get("task_input")
	input, ok = in.(pyjson.Object)
	return tss, input, ok
}
