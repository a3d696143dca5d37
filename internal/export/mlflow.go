// Package export sends an evaluation's results to the run trackers NeMo
// Gym users configure: MLflow, through its REST API (params, metrics and
// the rollouts as a table artifact, under NeMo Gym's names).
package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MLflow limits NeMo Gym's exporter keeps to.
const (
	maxParamsPerBatch  = 100
	maxMetricsPerBatch = 1000
	maxValueLength     = 6000
	maxKeyLength       = 250
)

// MLflow is one run on an MLflow tracking server.
type MLflow struct {
	URI, Token, Experiment, RunName string
	HTTP                            *http.Client
	Now                             func() time.Time

	runID, artifactURI string
}

// APIError is an answer of the tracking server other than success.
type APIError struct {
	Method, URL string
	Status      int
	Body        string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("MLflow %s %s answered %d: %s", e.Method, e.URL, e.Status, strings.TrimSpace(e.Body))
}

func (m *MLflow) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *MLflow) call(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	return m.send(ctx, method, strings.TrimRight(m.URI, "/")+path, "application/json", rd, out)
}

func (m *MLflow) send(ctx context.Context, method, target, contentType string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	// As NeMo Gym's exporter: a bearer only when a token is set.
	if m.Token != "" {
		req.Header.Set("Authorization", "Bearer "+m.Token)
	}
	client := m.HTTP
	if client == nil {
		client = &http.Client{Timeout: 60 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &APIError{Method: method, URL: redact(target), Status: resp.StatusCode, Body: string(data)}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = url.User("****")
	return u.String()
}

// Start opens the run: the experiment, made if missing (found again if a
// concurrent shard made it first), and a new run named RunName.
func (m *MLflow) Start(ctx context.Context) error {
	id, err := m.experimentID(ctx)
	if err != nil {
		return err
	}
	var created struct {
		Run struct {
			Info struct {
				RunID       string `json:"run_id"`
				ArtifactURI string `json:"artifact_uri"`
			} `json:"info"`
		} `json:"run"`
	}
	err = m.call(ctx, "POST", "/api/2.0/mlflow/runs/create", map[string]any{
		"experiment_id": id, "run_name": m.RunName, "start_time": m.now().UnixMilli(),
		"tags": []map[string]string{{"key": "mlflow.runName", "value": m.RunName}},
	}, &created)
	if err != nil {
		return err
	}
	m.runID, m.artifactURI = created.Run.Info.RunID, created.Run.Info.ArtifactURI
	return nil
}

// RunID is the open run's id.
func (m *MLflow) RunID() string { return m.runID }

func (m *MLflow) experimentID(ctx context.Context) (string, error) {
	var found struct {
		Experiment struct {
			ID string `json:"experiment_id"`
		} `json:"experiment"`
	}
	get := func() error {
		return m.call(ctx, "GET", "/api/2.0/mlflow/experiments/get-by-name?experiment_name="+url.QueryEscape(m.Experiment), nil, &found)
	}
	err := get()
	var api *APIError
	if err == nil {
		return found.Experiment.ID, nil
	}
	if !errors.As(err, &api) || api.Status != http.StatusNotFound {
		return "", err
	}
	var created struct {
		ID string `json:"experiment_id"`
	}
	if err := m.call(ctx, "POST", "/api/2.0/mlflow/experiments/create", map[string]string{"name": m.Experiment}, &created); err != nil {
		if get() == nil {
			return found.Experiment.ID, nil
		}
		return "", err
	}
	return created.ID, nil
}

// Param is one run parameter.
type Param struct{ Key, Value string }

// Metric is a number, or (IsText) a string, which MLflow gets as a tag.
type Metric struct {
	Key    string
	Value  float64
	Text   string
	IsText bool
}

// LogConfig records the run's config as NeMo Gym does: the whole of it as
// the global_config.json artifact, and each leaf as a param.
func (m *MLflow) LogConfig(ctx context.Context, configJSON []byte, params []Param) error {
	if err := m.upload(ctx, "global_config.json", "application/json", configJSON); err != nil {
		return err
	}
	var batch []map[string]string
	seen := map[string]bool{}
	for _, p := range params {
		key, ok := SanitizeKey(p.Key)
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		batch = append(batch, map[string]string{"key": key, "value": truncate(p.Value)})
		if len(batch) == maxParamsPerBatch {
			if err := m.logBatch(ctx, nil, batch, nil); err != nil {
				return err
			}
			batch = nil
		}
	}
	if len(batch) > 0 {
		return m.logBatch(ctx, nil, batch, nil)
	}
	return nil
}

// LogMetrics records metrics at step (0 for none, as NeMo Gym's exporter
// does); a text value becomes a tag.
func (m *MLflow) LogMetrics(ctx context.Context, metrics []Metric, step int64) error {
	ts := m.now().UnixMilli()
	var nums []map[string]any
	var tags []map[string]string
	for _, mt := range metrics {
		key, ok := SanitizeKey(mt.Key)
		if !ok {
			continue
		}
		if mt.IsText {
			tags = append(tags, map[string]string{"key": key, "value": truncate(mt.Text)})
			continue
		}
		if math.IsNaN(mt.Value) || math.IsInf(mt.Value, 0) {
			continue // JSON has no such number; MLflow's API would refuse the batch
		}
		nums = append(nums, map[string]any{"key": key, "value": mt.Value, "timestamp": ts, "step": step})
	}
	for len(nums) > 0 {
		n := min(len(nums), maxMetricsPerBatch)
		if err := m.logBatch(ctx, nums[:n], nil, nil); err != nil {
			return err
		}
		nums = nums[n:]
	}
	for len(tags) > 0 {
		n := min(len(tags), maxParamsPerBatch)
		if err := m.logBatch(ctx, nil, nil, tags[:n]); err != nil {
			return err
		}
		tags = tags[n:]
	}
	return nil
}

// LogRollouts uploads the rollouts as the rollouts.json table NeMo Gym's
// exporter writes (pandas' split orientation, one "Rollout" column of
// JSON text) and tags it as a logged table.
func (m *MLflow) LogRollouts(ctx context.Context, rows [][]byte) error {
	var b bytes.Buffer
	b.WriteString(`{"columns":["Rollout"],"data":[`)
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		appendPandasString(&b, string(r))
		b.WriteByte(']')
	}
	b.WriteString("]}")
	if err := m.upload(ctx, "rollouts.json", "application/json", b.Bytes()); err != nil {
		return err
	}
	return m.logBatch(ctx, nil, nil, []map[string]string{{"key": "mlflow.loggedArtifacts", "value": `[{"path": "rollouts.json", "type": "table"}]`}})
}

// Finish ends the run with status FINISHED, FAILED or KILLED.
func (m *MLflow) Finish(ctx context.Context, status string) error {
	return m.call(ctx, "POST", "/api/2.0/mlflow/runs/update", map[string]any{"run_id": m.runID, "status": status, "end_time": m.now().UnixMilli()}, nil)
}

func (m *MLflow) logBatch(ctx context.Context, metrics []map[string]any, params, tags []map[string]string) error {
	body := map[string]any{"run_id": m.runID}
	if metrics != nil {
		body["metrics"] = metrics
	}
	if params != nil {
		body["params"] = params
	}
	if tags != nil {
		body["tags"] = tags
	}
	return m.call(ctx, "POST", "/api/2.0/mlflow/runs/log-batch", body, nil)
}

// upload puts a file at the run's artifact root through the tracking
// server's artifact proxy (mlflow-artifacts:, what `mlflow server` serves
// by default), or to an HTTP artifact root.
func (m *MLflow) upload(ctx context.Context, name, contentType string, data []byte) error {
	var target string
	switch u := m.artifactURI; {
	case strings.HasPrefix(u, "mlflow-artifacts:"):
		rest := strings.TrimPrefix(strings.TrimPrefix(u, "mlflow-artifacts:"), "//")
		if i := strings.Index(rest, "/"); i > 0 && !strings.HasPrefix(rest, "/") {
			rest = rest[i:] // mlflow-artifacts://host/path names the server; the path is what counts
		}
		target = strings.TrimRight(m.URI, "/") + "/api/2.0/mlflow-artifacts/artifacts/" + strings.Trim(rest, "/") + "/" + name
	case strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://"):
		target = strings.TrimRight(u, "/") + "/" + name
	default:
		return fmt.Errorf("the run's artifact root is %s, which gym cannot write to over HTTP; start the tracking server with artifact serving (mlflow server --serve-artifacts, the default) to upload %s", u, name)
	}
	return m.send(ctx, "PUT", target, contentType, bytes.NewReader(data), nil)
}

func truncate(s string) string {
	if utf8.RuneCountInString(s) <= maxValueLength {
		return s
	}
	return string([]rune(s)[:maxValueLength])
}

var leadingDots = regexp.MustCompile(`^\.+`)

// SanitizeKey is NeMo Gym's _sanitize_key: '@' as _at_, characters MLflow
// refuses as '_', empty and dot-only path segments mended, long keys cut
// in the middle; false when nothing is left.
func SanitizeKey(key string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.ReplaceAll(key, "@", "_at_") {
		if r == '/' || r == '.' || r == '-' || r == ' ' || r == ':' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := normalizeKeyPath(elide(normalizeKeyPath(b.String())))
	return s, s != ""
}

func normalizeKeyPath(key string) string {
	var segs []string
	for _, seg := range strings.Split(key, "/") {
		if seg == "" {
			continue
		}
		if strings.Trim(seg, ".") == "" {
			seg = strings.Repeat("_", len(seg))
		}
		segs = append(segs, seg)
	}
	joined := strings.Join(segs, "/")
	return leadingDots.ReplaceAllStringFunc(joined, func(m string) string { return strings.Repeat("_", len(m)) })
}

func elide(key string) string {
	r := []rune(key)
	if len(r) <= maxKeyLength {
		return key
	}
	kept := maxKeyLength - 3
	head, tail := kept-kept/2, kept/2
	return string(r[:head]) + "___" + string(r[len(r)-tail:])
}

// appendPandasString writes s as pandas' to_json does: Python's ASCII
// escaping, with '/' escaped too.
func appendPandasString(b *bytes.Buffer, s string) { writeASCIIString(b, s, true) }
