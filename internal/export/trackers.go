package export

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Trackers are the run trackers a config turns on, with NeMo Gym's keys:
// mlflow_tracking_uri, mlflow_tracking_token, mlflow_experiment_name,
// mlflow_run_name, and upload_rollouts (default true; the deprecated
// upload_rollouts_to_wandb is its alias).
type Trackers struct {
	MLflow         *MLflow
	UploadRollouts bool
	// Warn receives what went wrong talking to a tracker: tracking is best
	// effort and never fails the evaluation, as in NeMo Gym.
	Warn io.Writer
}

var (
	wandbKeys  = []string{"wandb_project", "wandb_name", "wandb_api_key"}
	mlflowKeys = []string{"mlflow_tracking_uri", "mlflow_experiment_name", "mlflow_run_name"}
)

// FromConfig reads the tracker keys through get. Weights & Biases is
// refused by name: gym does not implement it. MLflow needs its three keys
// together; some without the others is an error, not a tracker quietly
// off.
func FromConfig(get func(key string) (*tree.Node, error)) (*Trackers, error) {
	str := func(key string) (string, error) {
		n, err := get(key)
		if err != nil || n == nil || n.Kind == tree.Null {
			return "", err
		}
		if n.Kind != tree.String {
			return "", fmt.Errorf("invalid configuration: %s must be a string, got %s", key, n.GoString())
		}
		return n.Str, nil
	}
	for _, k := range wandbKeys {
		if v, err := str(k); err != nil || v != "" {
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("invalid configuration: %s is set, but gym does not export to Weights & Biases (its API needs W&B's cloud, which gym cannot test against); remove the wandb_* keys, or track the run in MLflow with mlflow_tracking_uri, mlflow_experiment_name and mlflow_run_name", k)
		}
	}
	t := &Trackers{UploadRollouts: true}
	for _, k := range []string{"upload_rollouts_to_wandb", "upload_rollouts"} {
		n, err := get(k)
		if err != nil {
			return nil, err
		}
		if n == nil || n.Kind == tree.Null {
			continue
		}
		b, err := config.LaxBool(n)
		if err != nil {
			return nil, fmt.Errorf("invalid configuration: %s must be true or false: %w", k, err)
		}
		t.UploadRollouts = b
	}
	values := map[string]string{}
	var set, missing []string
	for _, k := range mlflowKeys {
		v, err := str(k)
		if err != nil {
			return nil, err
		}
		values[k] = v
		if v != "" {
			set = append(set, k)
		} else {
			missing = append(missing, k)
		}
	}
	token, err := str("mlflow_tracking_token")
	if err != nil {
		return nil, err
	}
	if len(set) == 0 {
		if token != "" {
			return nil, fmt.Errorf("invalid configuration: mlflow_tracking_token is set, but MLflow tracking also needs %s", strings.Join(missing, ", "))
		}
		return t, nil
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("invalid configuration: MLflow tracking needs mlflow_tracking_uri, mlflow_experiment_name and mlflow_run_name together; set: %s; missing: %s", strings.Join(set, ", "), strings.Join(missing, ", "))
	}
	t.MLflow = &MLflow{URI: values["mlflow_tracking_uri"], Token: token, Experiment: values["mlflow_experiment_name"], RunName: values["mlflow_run_name"]}
	return t, nil
}

func (t *Trackers) warn(what string, err error) {
	if err != nil && t.Warn != nil {
		fmt.Fprintf(t.Warn, "Warning: MLflow: could not %s; continuing without it: %v\n", what, err)
	}
}

// Start opens the tracker's run and logs the config (secrets already
// masked); a tracker that cannot start is dropped with a warning.
func (t *Trackers) Start(ctx context.Context, config *tree.Node) {
	if t == nil || t.MLflow == nil {
		return
	}
	if err := t.MLflow.Start(ctx); err != nil {
		t.warn("start the run", err)
		t.MLflow = nil
		return
	}
	var buf bytes.Buffer
	writeJSON(&buf, config, 0)
	buf.WriteByte('\n')
	t.warn("log the config", t.MLflow.LogConfig(ctx, buf.Bytes(), Flatten(config)))
}

// Metrics logs each primitive metric.
func (t *Trackers) Metrics(ctx context.Context, metrics []Metric) {
	if t == nil || t.MLflow == nil || t.MLflow.RunID() == "" || len(metrics) == 0 {
		return
	}
	t.warn("log the metrics", t.MLflow.LogMetrics(ctx, metrics, 0))
}

// Rollouts uploads the rollouts when upload_rollouts is on.
func (t *Trackers) Rollouts(ctx context.Context, rows [][]byte) {
	if t == nil || t.MLflow == nil || t.MLflow.RunID() == "" || !t.UploadRollouts {
		return
	}
	t.warn("upload the rollouts", t.MLflow.LogRollouts(ctx, rows))
}

// Finish ends the run: FINISHED, or FAILED / KILLED when the evaluation
// did not complete.
func (t *Trackers) Finish(ctx context.Context, status string) {
	if t == nil || t.MLflow == nil || t.MLflow.RunID() == "" {
		return
	}
	t.warn("end the run", t.MLflow.Finish(ctx, status))
}

// RunStatus is the tracker status of an evaluation that ended with err.
func RunStatus(err error) string {
	switch {
	case err == nil:
		return "FINISHED"
	case errors.Is(err, context.Canceled):
		return "KILLED"
	}
	return "FAILED"
}

// Report sends what an evaluation wrote: each agent's metrics from the
// aggregate file (as <agent>/<metric> and key_metrics/<agent>/<metric>) and
// the rollouts, as NeMo Gym exports them (no ng_trajectory, no call
// payloads).
func (t *Trackers) Report(ctx context.Context, rolloutsPath, metricsPath string) {
	if t == nil || t.MLflow == nil {
		return
	}
	if data, err := os.ReadFile(metricsPath); err == nil {
		t.Metrics(ctx, AggregateMetrics(data))
	}
	if !t.UploadRollouts {
		return
	}
	rows, err := exportRows(rolloutsPath)
	if err != nil {
		t.warn("read the rollouts", err)
		return
	}
	t.Rollouts(ctx, rows)
}

// AggregateMetrics are the primitive metrics of an aggregate metrics file.
func AggregateMetrics(data []byte) []Metric {
	var out []Metric
	gjson.ParseBytes(data).ForEach(func(_, agent gjson.Result) bool {
		name := agent.Get("agent_ref.name").String()
		for _, group := range []struct{ prefix, key string }{{name + "/", "agent_metrics"}, {"key_metrics/" + name + "/", "key_metrics"}} {
			agent.Get(group.key).ForEach(func(k, v gjson.Result) bool {
				switch v.Type {
				case gjson.Number:
					out = append(out, Metric{Key: group.prefix + k.String(), Value: v.Num})
				case gjson.True:
					out = append(out, Metric{Key: group.prefix + k.String(), Value: 1})
				case gjson.False:
					out = append(out, Metric{Key: group.prefix + k.String(), Value: 0})
				case gjson.String:
					out = append(out, Metric{Key: group.prefix + k.String(), Text: v.Str, IsText: true})
				}
				return true
			})
		}
		return true
	})
	return out
}

// exportRows reads the rollouts as NeMo Gym's exporters get them.
func exportRows(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		row := bytes.TrimSpace(sc.Bytes())
		if len(row) == 0 {
			continue
		}
		row, err = sjson.DeleteBytes(bytes.Clone(row), "ng_trajectory")
		if err != nil {
			return nil, err
		}
		n := gjson.GetBytes(row, "ng_model_call_capture.calls.#").Int()
		for i := range n {
			for _, k := range []string{"request", "response", "request_raw", "response_raw"} {
				if row, err = sjson.DeleteBytes(row, "ng_model_call_capture.calls."+strconv.FormatInt(i, 10)+"."+k); err != nil {
					return nil, err
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, sc.Err()
}

// Flatten is NeMo Gym's _flatten_config: each leaf under its dotted path,
// list items as path[i], its value as Python's str() renders it.
func Flatten(n *tree.Node) []Param {
	var out []Param
	var walk func(prefix string, n *tree.Node)
	walk = func(prefix string, n *tree.Node) {
		switch n.Kind {
		case tree.Map:
			for _, e := range n.Entries {
				key := e.Key
				if prefix != "" {
					key = prefix + "." + key
				}
				walk(key, e.Value)
			}
		case tree.List:
			for i, it := range n.Items {
				walk(prefix+"["+strconv.Itoa(i)+"]", it)
			}
		default:
			out = append(out, Param{Key: prefix, Value: override.PythonStr(n)})
		}
	}
	walk("", n)
	return out
}

// writeJSON writes the config as Python's json.dump(indent=2) does:
// ASCII only, ", " and ": " separators.
func writeJSON(b *bytes.Buffer, n *tree.Node, depth int) {
	indent := func(d int) { b.WriteString("\n" + strings.Repeat("  ", d)) }
	switch n.Kind {
	case tree.Map:
		if len(n.Entries) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, e := range n.Entries {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			pyJSONString(b, e.Key)
			b.WriteString(": ")
			writeJSON(b, e.Value, depth+1)
		}
		indent(depth)
		b.WriteByte('}')
	case tree.List:
		if len(n.Items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, it := range n.Items {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			writeJSON(b, it, depth+1)
		}
		indent(depth)
		b.WriteByte(']')
	case tree.Null:
		b.WriteString("null")
	case tree.Bool:
		b.WriteString(strconv.FormatBool(n.Bool))
	case tree.Float:
		switch {
		case math.IsNaN(n.Float):
			b.WriteString("NaN")
		case math.IsInf(n.Float, 1):
			b.WriteString("Infinity")
		case math.IsInf(n.Float, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(override.PythonStr(n))
		}
	case tree.Int, tree.BigInt:
		b.WriteString(override.PythonStr(n))
	default:
		pyJSONString(b, n.Str)
	}
}

// pyJSONString is a string as Python's json.dumps writes it.
func pyJSONString(b *bytes.Buffer, s string) { writeASCIIString(b, s, false) }

func writeASCIIString(b *bytes.Buffer, s string, escapeSlash bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '/' && escapeSlash:
			b.WriteString(`\/`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r > 0x7f:
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
