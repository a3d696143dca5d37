package datastore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/progress"
)

// GitLab is GitLab's model registry spoken to as NeMo Gym speaks to it:
// through the MLflow REST API GitLab serves under
// <gitlab>/api/v4/projects/<id>/ml/mlflow (registered models and model
// versions), with a version's files in the model registry's package
// files, <gitlab>/api/v4/projects/<id>/packages/ml_models/<version
// id>/files/, which is the artifact_uri of the version's run.
type GitLab struct {
	// TrackingURI is mlflow_tracking_uri.
	TrackingURI string
	// Token is mlflow_tracking_token, sent as a bearer token to the
	// tracking URI's host only.
	Token string
	HTTP  *http.Client
	// Retries caps retries of a rate-limited, failed or cut-off request
	// (0: 5, negative: none); Backoff is the first wait, doubled each time (default 1 s).
	Retries int
	Backoff time.Duration
	// Log receives a line per retry; nil is silent.
	Log io.Writer
	// Progress, when set, meters each upload and download.
	Progress func(label string, total int64) progress.Meter
}

// GitLabError is an error answer of GitLab, with what to do about it.
type GitLabError struct {
	URL    string
	Status int
	// Code is MLflow's error_code (RESOURCE_DOES_NOT_EXIST, ...), when given.
	Code    string
	Message string
	Hint    string
}

func (e *GitLabError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Code != "" || e.Message != "" {
		msg += " (" + strings.TrimSpace(e.Code+" "+e.Message) + ")"
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// NotFound tells whether err is the registry saying the model, version
// or run does not exist (a bare 404 is a wrong URL or project instead).
func NotFound(err error) bool {
	var ge *GitLabError
	return errors.As(err, &ge) && ge.Code == "RESOURCE_DOES_NOT_EXIST"
}

// ModelVersion is the part of an MLflow model version NeMo Gym uses.
type ModelVersion struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	RunID   string `json:"run_id"`
}

func (g *GitLab) api(method string) string {
	return strings.TrimRight(g.TrackingURI, "/") + "/api/2.0/mlflow/" + method
}

// CreateRegisteredModel registers a model (NeMo Gym's dataset); one that
// exists already is no error.
func (g *GitLab) CreateRegisteredModel(ctx context.Context, name string) error {
	_, err := g.call(ctx, http.MethodPost, g.api("registered-models/create"), map[string]any{"name": name}, nil)
	var ge *GitLabError
	if errors.As(err, &ge) && (ge.Code == "RESOURCE_ALREADY_EXISTS" || ge.Status == http.StatusConflict) {
		return nil
	}
	return err
}

// RegisteredModelExists asks whether the registry has a model of this
// (case-sensitive) name.
func (g *GitLab) RegisteredModelExists(ctx context.Context, name string) (bool, error) {
	_, err := g.call(ctx, http.MethodGet, g.api("registered-models/get")+"?"+url.Values{"name": {name}}.Encode(), nil, nil)
	if NotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// DeleteRegisteredModel deletes a model and every version of it.
func (g *GitLab) DeleteRegisteredModel(ctx context.Context, name string) error {
	_, err := g.call(ctx, http.MethodDelete, g.api("registered-models/delete"), map[string]any{"name": name}, nil)
	return err
}

// GetModelVersion reads a version of a model.
func (g *GitLab) GetModelVersion(ctx context.Context, name, version string) (ModelVersion, error) {
	u := g.api("model-versions/get") + "?" + url.Values{"name": {name}, "version": {version}}.Encode()
	b, err := g.call(ctx, http.MethodGet, u, nil, func(status int) string {
		if status == http.StatusNotFound {
			return fmt.Sprintf("the registry has no dataset %s at version %s", name, version)
		}
		return ""
	})
	if err != nil {
		return ModelVersion{}, err
	}
	return decodeVersion(u, b)
}

// CreateModelVersion creates version of a model. GitLab takes the
// version number from the gitlab.version tag; the source is the version,
// as NeMo Gym sends it.
func (g *GitLab) CreateModelVersion(ctx context.Context, name, version string) (ModelVersion, error) {
	u := g.api("model-versions/create")
	b, err := g.call(ctx, http.MethodPost, u, map[string]any{"name": name, "source": version,
		"tags": []map[string]string{{"key": "gitlab.version", "value": version}}}, nil)
	if err != nil {
		return ModelVersion{}, err
	}
	return decodeVersion(u, b)
}

func decodeVersion(u string, b []byte) (ModelVersion, error) {
	var out struct {
		ModelVersion ModelVersion `json:"model_version"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.ModelVersion.RunID == "" {
		return ModelVersion{}, fmt.Errorf("%s: the answer is not a model version with a run_id", u)
	}
	return out.ModelVersion, nil
}

// ArtifactURI is where a run's files are.
func (g *GitLab) ArtifactURI(ctx context.Context, runID string) (string, error) {
	u := g.api("runs/get") + "?" + url.Values{"run_id": {runID}}.Encode()
	b, err := g.call(ctx, http.MethodGet, u, nil, nil)
	if err != nil {
		return "", err
	}
	var out struct {
		Run struct {
			Info struct {
				ArtifactURI string `json:"artifact_uri"`
			} `json:"info"`
		} `json:"run"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Run.Info.ArtifactURI == "" {
		return "", fmt.Errorf("%s: the answer is not a run with an artifact_uri", u)
	}
	a, err := url.Parse(out.Run.Info.ArtifactURI)
	if err != nil || (a.Scheme != "http" && a.Scheme != "https") {
		return "", fmt.Errorf("%s: artifact_uri %q is not an http(s) URL gym can reach", u, out.Run.Info.ArtifactURI)
	}
	return out.Run.Info.ArtifactURI, nil
}

// ArtifactURL is a file's URL under an artifact URI.
func ArtifactURL(artifactURI, file string) string {
	var parts []string
	for _, p := range strings.Split(strings.TrimLeft(file, "/"), "/") {
		parts = append(parts, url.PathEscape(p))
	}
	return strings.TrimRight(artifactURI, "/") + "/" + strings.Join(parts, "/")
}

// UploadArtifact puts a local file under an artifact URI by its base
// name, as MLflow's HTTP artifact repository does.
func (g *GitLab) UploadArtifact(ctx context.Context, artifactURI, local string) error {
	st, err := os.Stat(local)
	if err != nil {
		return err
	}
	u := ArtifactURL(artifactURI, path.Base(filepathToSlash(local)))
	meter := g.meter("Uploading "+path.Base(filepathToSlash(local)), st.Size())
	defer meter.Finish()
	return g.retry(ctx, u, func() error {
		f, err := os.Open(local)
		if err != nil {
			return err
		}
		defer f.Close()
		body := &progress.Reader{R: f, Meter: meter}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, body)
		if err != nil {
			return err
		}
		req.ContentLength = st.Size()
		req.Header.Set("Content-Type", "application/octet-stream")
		g.authorize(req)
		resp, err := g.client().Do(req)
		if err != nil {
			meter.Add(-body.N)
			return hub.Transient{Err: err}
		}
		defer resp.Body.Close()
		if err := g.statusError(u, resp, nil); err != nil {
			meter.Add(-body.N)
			return err
		}
		return nil
	})
}

// Download fetches url into out: into out.part first, resumed from what
// a cut-off try (of this run or an earlier one) left there when the
// server still has the same version (ETag) and serves ranges; the size
// is checked against Content-Length, and out appears only when whole.
func (g *GitLab) Download(ctx context.Context, u, out string) error {
	part := out + ".part"
	return g.retry(ctx, u, func() error {
		have := jsonl.FileSize(part)
		validator := jsonl.ReadString(part + ".etag")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept-Encoding", "identity")
		if validator == "" {
			have = 0 // without the version to match, the part is not resumed
		}
		if have > 0 {
			req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
			req.Header.Set("If-Range", validator)
		}
		g.authorize(req)
		resp, err := g.client().Do(req)
		if err != nil {
			return hub.Transient{Err: err}
		}
		defer resp.Body.Close()
		resumed, err := hub.Resumed(resp, part, have)
		if err != nil {
			return err
		}
		total := int64(-1)
		if resumed {
			total = rangeTotal(resp.Header.Get("Content-Range"))
		} else {
			if err := g.statusError(u, resp, func(status int) string {
				if status == http.StatusNotFound {
					return "the dataset version has no such file (check +artifact_fpath)"
				}
				return ""
			}); err != nil {
				return err
			}
			have = 0
			total = resp.ContentLength
		}
		// What If-Range sends back: the version's ETag, else its date.
		validator = resp.Header.Get("ETag")
		if validator == "" {
			validator = resp.Header.Get("Last-Modified")
		}
		if err := os.WriteFile(part+".etag", []byte(validator), 0o644); err != nil {
			return err
		}
		meter := g.meter("Downloading "+path.Base(out), total)
		meter.Add(have)
		if err := hub.WritePart(part, resumed, resp.Body, meter); err != nil {
			return err
		}
		if got := jsonl.FileSize(part); total >= 0 && got != total {
			return hub.Transient{Err: fmt.Errorf("the download stopped at %d of %d bytes", got, total)}
		}
		os.Remove(part + ".etag")
		return os.Rename(part, out)
	})
}

func (g *GitLab) meter(label string, total int64) progress.Meter {
	if g.Progress == nil {
		return progress.NoMeter
	}
	return g.Progress(label, total)
}

// authorize sends the token to the tracking URI's own host only.
func (g *GitLab) authorize(req *http.Request) { hub.Authorize(req, g.TrackingURI, g.Token) }

// client drops the token on a redirect to another host (GitLab may send
// a package file's download to object storage).
func (g *GitLab) client() *http.Client {
	hc := http.Client{}
	if g.HTTP != nil {
		hc = *g.HTTP
	}
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
			req.Header.Del("Authorization")
		}
		if len(via) >= 10 {
			return errors.New("more than 10 redirects")
		}
		return nil
	}
	return &hc
}

// call makes one MLflow API request (a JSON body, or none) with retries.
func (g *GitLab) call(ctx context.Context, method, u string, body any, hint func(int) string) ([]byte, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	var out []byte
	err := g.retry(ctx, u, func() error {
		var r io.Reader
		if payload != nil {
			r = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, u, r)
		if err != nil {
			return err
		}
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		g.authorize(req)
		resp, err := g.client().Do(req)
		if err != nil {
			return hub.Transient{Err: err}
		}
		defer resp.Body.Close()
		if err := g.statusError(u, resp, hint); err != nil {
			return err
		}
		out, err = io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if err != nil {
			return hub.Transient{Err: err}
		}
		return nil
	})
	return out, err
}

func (g *GitLab) statusError(u string, resp *http.Response, hint func(int) string) error {
	if resp.StatusCode < 300 {
		return nil
	}
	e := &GitLabError{URL: redactURL(u), Status: resp.StatusCode}
	var body struct {
		ErrorCode string `json:"error_code"`
		Message   any    `json:"message"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if json.Unmarshal(b, &body) == nil {
		e.Code = body.ErrorCode
		if s, ok := body.Message.(string); ok {
			e.Message = strings.Join(strings.Fields(s), " ")
		}
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if g.Token == "" {
			e.Hint = "GitLab wants a token: set mlflow_tracking_token in env.yaml (or MLFLOW_TRACKING_TOKEN) to an access token with the api scope"
		} else {
			e.Hint = "GitLab refused the token: check that mlflow_tracking_token (or MLFLOW_TRACKING_TOKEN) is a valid, unexpired access token with the api scope"
		}
	case http.StatusForbidden:
		e.Hint = "the token's user may not do this in the project: the model registry needs at least the Developer role and the api scope"
	case http.StatusTooManyRequests:
		e.Hint = "GitLab is rate-limiting these requests; wait and run again"
	case http.StatusNotFound:
		if e.Code == "" {
			e.Hint = "check mlflow_tracking_uri (<gitlab>/api/v4/projects/<project id>/ml/mlflow) and that the project has the model registry"
		}
	}
	if hint != nil {
		if h := hint(resp.StatusCode); h != "" {
			e.Hint = h
		}
	}
	return hub.RetryLater(resp, e)
}

// rangeTotal is the whole file's size a Content-Range names ("bytes
// 4-9/10"), or -1 when it names none ("bytes 4-9/*") or does not parse.
func rangeTotal(contentRange string) int64 {
	i := strings.LastIndexByte(contentRange, '/')
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(contentRange[i+1:], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// redactURL drops a URL's query signature-like parts: object storage
// URLs are signed, and a signature is as secret as a token.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	for k := range p.Query() {
		if strings.Contains(strings.ToLower(k), "signature") || strings.Contains(strings.ToLower(k), "token") {
			p.RawQuery = ""
			break
		}
	}
	p.User = nil
	return p.String()
}

func (g *GitLab) retry(ctx context.Context, u string, try func() error) error {
	return hub.Retrier{Retries: g.Retries, Backoff: g.Backoff, Log: g.Log, Service: "gitlab"}.Do(ctx, redactURL(u), try)
}

func filepathToSlash(p string) string { return strings.ReplaceAll(p, "\\", "/") }
