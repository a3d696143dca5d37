// Package gitlabtest is a local GitLab model registry for tests, written
// from GitLab's documentation of its MLflow client compatibility and its
// model registry API: the MLflow REST endpoints NeMo Gym's MlflowClient
// calls under /api/v4/projects/{id}/ml/mlflow/api/2.0/mlflow/
// (registered-models create/get/delete, model-versions create/get,
// runs/get), and a version's files under
// /api/v4/projects/{id}/packages/ml_models/{version id}/files/, the run's
// artifact_uri. It can demand a token, cut a download short, refuse
// requests with a status, and logs what it served.
package gitlabtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

// ProjectID is the project the fake registry belongs to.
const ProjectID = "42"

// Server is a fake GitLab.
type Server struct {
	*httptest.Server
	// Token, when set, is required as a bearer token.
	Token string
	// ReadToken, when set, may read and gets 403 for any write.
	ReadToken string

	mu     sync.Mutex
	models map[string]*model
	files  map[string][]byte // "versionID/path" → content
	nextID int
	log    []string
	// Faults are served by every request (refusals) and the package
	// files (downloads, by file path).
	hubtest.Faults
}

type model struct {
	versions map[string]int // version → id
}

// New starts a fake GitLab; stop it with Close.
func New() *Server {
	s := &Server{models: map[string]*model{}, files: map[string][]byte{}, nextID: 1}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// TrackingURI is the mlflow_tracking_uri of the fake project.
func (s *Server) TrackingURI() string {
	return s.URL + "/api/v4/projects/" + ProjectID + "/ml/mlflow"
}

// AddVersion registers name at version holding file.
func (s *Server) AddVersion(name, version, file string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.model(name)
	id := s.version(m, version)
	s.files[strconv.Itoa(id)+"/"+file] = b
}

// File is a version's file, and whether it is there.
func (s *Server) File(name, version, file string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.models[name]
	if !ok {
		return nil, false
	}
	id, ok := m.versions[version]
	if !ok {
		return nil, false
	}
	b, ok := s.files[strconv.Itoa(id)+"/"+file]
	return b, ok
}

// HasModel tells whether the registry has a model.
func (s *Server) HasModel(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.models[name]
	return ok
}

// Requests has a line per request served: method, path, and a Range
// header when there was one.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *Server) model(name string) *model {
	m, ok := s.models[name]
	if !ok {
		m = &model{versions: map[string]int{}}
		s.models[name] = m
	}
	return m
}

func (s *Server) version(m *model, v string) int {
	id, ok := m.versions[v]
	if !ok {
		id = s.nextID
		s.nextID++
		m.versions[v] = id
	}
	return id
}

// runID is the MLflow run id GitLab gives a version's candidate.
func runID(id int) string { return fmt.Sprintf("candidate-%08d", id) }

func mlflowError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error_code": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

var semver = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	line := r.Method + " " + r.URL.EscapedPath()
	if rg := r.Header.Get("Range"); rg != "" {
		line += " Range: " + rg
	}
	s.log = append(s.log, line)
	if status, ok := s.Refusal(w); ok {
		s.mu.Unlock()
		http.Error(w, `{"message":"`+http.StatusText(status)+`"}`, status)
		return
	}
	auth := r.Header.Get("Authorization")
	readOnly := s.ReadToken != "" && auth == "Bearer "+s.ReadToken
	if s.Token != "" && !readOnly && auth != "Bearer "+s.Token {
		s.mu.Unlock()
		http.Error(w, `{"message":"401 Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	if readOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.mu.Unlock()
		http.Error(w, `{"message":"403 Forbidden"}`, http.StatusForbidden)
		return
	}
	project := "/api/v4/projects/" + ProjectID
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, project+"/packages/ml_models/"); ok {
		s.packageFile(w, r, rest) // unlocks
		return
	}
	defer s.mu.Unlock()
	method, ok := strings.CutPrefix(p, project+"/ml/mlflow/api/2.0/mlflow/")
	if !ok {
		http.Error(w, `{"message":"404 Project Not Found"}`, http.StatusNotFound)
		return
	}
	var body struct {
		Name, Source string
		Tags         []struct{ Key, Value string }
	}
	if r.Method == http.MethodPost || r.Method == http.MethodDelete || r.Method == http.MethodPatch {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			mlflowError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "the body is not JSON")
			return
		}
	}
	q := r.URL.Query()
	switch r.Method + " " + method {
	case "POST registered-models/create":
		if _, ok := s.models[body.Name]; ok {
			mlflowError(w, http.StatusBadRequest, "RESOURCE_ALREADY_EXISTS", "Model already exists")
			return
		}
		s.model(body.Name)
		writeJSON(w, map[string]any{"registered_model": map[string]any{"name": body.Name}})
	case "GET registered-models/get":
		if _, ok := s.models[q.Get("name")]; !ok {
			mlflowError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Model not found")
			return
		}
		writeJSON(w, map[string]any{"registered_model": map[string]any{"name": q.Get("name")}})
	case "DELETE registered-models/delete":
		m, ok := s.models[body.Name]
		if !ok {
			mlflowError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Model not found")
			return
		}
		for _, id := range m.versions {
			for k := range s.files {
				if strings.HasPrefix(k, strconv.Itoa(id)+"/") {
					delete(s.files, k)
				}
			}
		}
		delete(s.models, body.Name)
		writeJSON(w, map[string]any{})
	case "GET model-versions/get":
		m, ok := s.models[q.Get("name")]
		if !ok {
			mlflowError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Model not found")
			return
		}
		id, ok := m.versions[q.Get("version")]
		if !ok {
			mlflowError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Model version not found")
			return
		}
		writeJSON(w, s.versionJSON(q.Get("name"), q.Get("version"), id))
	case "POST model-versions/create":
		m, ok := s.models[body.Name]
		if !ok {
			mlflowError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Model not found")
			return
		}
		version := ""
		for _, t := range body.Tags {
			if t.Key == "gitlab.version" {
				version = t.Value
			}
		}
		if !semver.MatchString(version) {
			mlflowError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "Version must be semantic version")
			return
		}
		if _, ok := m.versions[version]; ok {
			mlflowError(w, http.StatusBadRequest, "RESOURCE_ALREADY_EXISTS", "Version already exists")
			return
		}
		writeJSON(w, s.versionJSON(body.Name, version, s.version(m, version)))
	case "GET runs/get":
		var id int
		if _, err := fmt.Sscanf(q.Get("run_id"), "candidate-%d", &id); err != nil || !s.hasVersionID(id) {
			mlflowError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Run not found")
			return
		}
		writeJSON(w, map[string]any{"run": map[string]any{
			"info": map[string]any{"run_id": runID(id), "artifact_uri": fmt.Sprintf("%s/api/v4/projects/%s/packages/ml_models/%d/files/", s.URL, ProjectID, id), "status": "RUNNING"},
			"data": map[string]any{}}})
	default:
		mlflowError(w, http.StatusNotFound, "ENDPOINT_NOT_FOUND", "no such MLflow endpoint in GitLab")
	}
}

func (s *Server) hasVersionID(id int) bool {
	for _, m := range s.models {
		for _, v := range m.versions {
			if v == id {
				return true
			}
		}
	}
	return false
}

func (s *Server) versionJSON(name, version string, id int) map[string]any {
	return map[string]any{"model_version": map[string]any{"name": name, "version": version, "run_id": runID(id),
		"creation_timestamp": 1700000000000, "last_updated_timestamp": 1700000000000, "current_stage": "None",
		"source": version, "status": "READY", "tags": []any{}}}
}

// packageFile serves PUT and GET of .../packages/ml_models/{id}/files/{path};
// GET answers ranges. It unlocks s.mu.
func (s *Server) packageFile(w http.ResponseWriter, r *http.Request, rest string) {
	idText, file, ok := strings.Cut(rest, "/files/")
	id, err := strconv.Atoi(idText)
	if !ok || err != nil || file == "" || !s.hasVersionID(id) {
		s.mu.Unlock()
		http.Error(w, `{"message":"404 Not Found"}`, http.StatusNotFound)
		return
	}
	key := idText + "/" + file
	switch r.Method {
	case http.MethodPut:
		s.mu.Unlock()
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.files[key] = b
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"message":"201 Created"}`))
	case http.MethodGet:
		b, ok := s.files[key]
		d := s.NextDownload(file, r)
		s.mu.Unlock()
		if !ok {
			http.Error(w, `{"message":"404 Not Found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("ETag", fmt.Sprintf(`"%d-%x"`, len(b), checksum(b)))
		d.Serve(w, r, b)
	default:
		s.mu.Unlock()
		http.Error(w, `{"message":"405 Method Not Allowed"}`, http.StatusMethodNotAllowed)
	}
}

func checksum(b []byte) uint32 {
	var h uint32 = 2166136261
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}
