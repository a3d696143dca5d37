package hubtest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The write half of the Hub's API, as its documentation and
// huggingface_hub's HfApi describe it: POST /api/repos/create, the
// collections API, POST /api/datasets/{repo}/preupload/{rev}, the git-LFS
// batch API at /datasets/{repo}.git/info/lfs/objects/batch (uploads go to
// the storage host, whole or in parts, then a verify call), and the NDJSON
// commit API POST /api/datasets/{repo}/commit/{rev} (?create_pr=1 opens a
// pull request on refs/pr/N).

// CollectionItem is one entry of a collection.
type CollectionItem struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// Commit is one commit made through the API.
type Commit struct {
	Repo, Revision, Summary, Description, Parent string
	// Files are the paths the commit wrote, in its order.
	Files []string
	// LFS are the paths among Files stored in LFS.
	LFS []string
}

// AddCollection creates an empty collection.
func (s *Server) AddCollection(slug string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collections[slug] = []CollectionItem{}
}

// AddLFSFile puts a file stored in LFS in repo at revision: its
// downloads announce its sha256 as X-Linked-Etag.
func (s *Server) AddLFSFile(repo, revision, path string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[repo+"@"+revision+":"+path] = b
	s.lfsFiles[repo+"@"+revision+":"+path] = true
}

// RangeRequests counts the storage downloads of path that asked for a range.
func (s *Server) RangeRequests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Ranges[path]
}

// Collection is a collection's items.
func (s *Server) Collection(slug string) []CollectionItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CollectionItem(nil), s.collections[slug]...)
}

// File is a file of repo at revision, and whether the Hub has it.
func (s *Server) File(repo, revision, path string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.files[repo+"@"+revision+":"+path]
	return b, ok
}

// IsLFS tells whether a file of repo at revision is stored in LFS.
func (s *Server) IsLFS(repo, revision, path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lfsFiles[repo+"@"+revision+":"+path]
}

// write serves the write API; false when p is none of its paths.
func (s *Server) write(w http.ResponseWriter, r *http.Request, p string) bool {
	switch {
	case r.Method == http.MethodPost && p == "/api/repos/create":
		s.createRepo(w, r)
	case r.Method == http.MethodPost && p == "/api/validate-yaml":
		validateYAML(w, r)
	case strings.HasPrefix(p, "/api/collections/"):
		s.collection(w, r, strings.TrimPrefix(p, "/api/collections/"))
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/api/datasets/") && strings.Contains(p, "/preupload/"):
		repo, rev, _ := strings.Cut(strings.TrimPrefix(p, "/api/datasets/"), "/preupload/")
		s.preupload(w, r, repo, unescape(rev))
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/api/datasets/") && strings.Contains(p, "/commit/"):
		repo, rev, _ := strings.Cut(strings.TrimPrefix(p, "/api/datasets/"), "/commit/")
		s.commitAPI(w, r, repo, unescape(rev))
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/datasets/") && strings.HasSuffix(p, ".git/info/lfs/objects/batch"):
		s.lfsBatch(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/datasets/"), ".git/info/lfs/objects/batch"))
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/datasets/") && strings.HasSuffix(p, ".git/info/lfs/objects/verify"):
		s.lfsVerify(w, r)
	default:
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) exists(repo string) bool {
	if s.repos[repo] {
		return true
	}
	for key := range s.files {
		if strings.HasPrefix(key, repo+"@") {
			return true
		}
	}
	return false
}

func (s *Server) createRepo(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name, Organization, Type, Visibility string
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" || req.Type != "dataset" {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	repo := req.Name
	if req.Organization != "" {
		repo = req.Organization + "/" + req.Name
	}
	if s.exists(repo) {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "You already created this dataset repo", "url": s.Hub.URL + "/datasets/" + repo})
		return
	}
	s.repos[repo] = true
	// The Hub's first commit holds a .gitattributes.
	s.files[repo+"@main:.gitattributes"] = []byte("*.parquet filter=lfs diff=lfs merge=lfs -text\n")
	s.heads[repo+"@main"] = commitID(repo, "main:initial")
	writeJSON(w, http.StatusOK, map[string]string{"url": s.Hub.URL + "/datasets/" + repo, "name": repo})
}

// collection serves GET /api/collections/{slug} and POST .../items.
func (s *Server) collection(w http.ResponseWriter, r *http.Request, rest string) {
	slug, items := strings.CutSuffix(rest, "/items")
	list, ok := s.collections[slug]
	if !ok {
		notFound(w, "CollectionNotFound")
		return
	}
	if !items && r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, collectionJSON(slug, list))
		return
	}
	if !items || r.Method != http.MethodPost {
		http.Error(w, `{"error":"method not allowed"}`, http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		Item CollectionItem `json:"item"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Item.ID == "" || req.Item.Type == "" {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	for _, it := range list {
		if strings.EqualFold(it.ID, req.Item.ID) && it.Type == req.Item.Type {
			writeJSON(w, http.StatusConflict, map[string]string{"error": "Item already in collection"})
			return
		}
	}
	s.collections[slug] = append(list, req.Item)
	writeJSON(w, http.StatusOK, collectionJSON(slug, s.collections[slug]))
}

// collectionJSON is a collection as the API answers with it, after a
// read and after an item is added.
func collectionJSON(slug string, list []CollectionItem) map[string]any {
	out := []map[string]any{}
	for i, it := range list {
		out = append(out, map[string]any{"_id": fmt.Sprintf("item%d", i), "id": it.ID, "type": it.Type, "position": i})
	}
	owner, _, _ := strings.Cut(slug, "/")
	return map[string]any{"slug": slug, "title": slug, "owner": map[string]string{"name": owner},
		"items": out, "lastUpdated": time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339), "position": 0,
		"private": false, "theme": "indigo", "upvotes": 0, "description": ""}
}

func (s *Server) preupload(w http.ResponseWriter, r *http.Request, repo, rev string) {
	if !s.exists(repo) {
		notFound(w, "RepoNotFound")
		return
	}
	var req struct {
		Files []struct {
			Path   string `json:"path"`
			Sample string `json:"sample"`
			Size   int64  `json:"size"`
		} `json:"files"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	threshold := s.LFSThreshold
	if threshold == 0 {
		threshold = 10 << 20
	}
	out := []map[string]any{}
	for _, f := range req.Files {
		sample, err := base64.StdEncoding.DecodeString(f.Sample)
		if err != nil || len(sample) > 512 {
			http.Error(w, `{"error":"bad sample"}`, http.StatusBadRequest)
			return
		}
		mode := "regular"
		if f.Size >= threshold || bytes.IndexByte(sample, 0) >= 0 {
			mode = "lfs"
		}
		out = append(out, map[string]any{"path": f.Path, "uploadMode": mode, "shouldIgnore": false})
	}
	writeJSON(w, http.StatusOK, map[string]any{"files": out})
}

func (s *Server) lfsBatch(w http.ResponseWriter, r *http.Request, repo string) {
	if !s.exists(repo) {
		notFound(w, "RepoNotFound")
		return
	}
	var req struct {
		Operation string `json:"operation"`
		Objects   []struct {
			OID  string `json:"oid"`
			Size int64  `json:"size"`
		} `json:"objects"`
		HashAlgo string `json:"hash_algo"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Operation != "upload" || req.HashAlgo != "sha256" {
		http.Error(w, `{"message":"bad batch request"}`, http.StatusUnprocessableEntity)
		return
	}
	var objects []map[string]any
	for _, o := range req.Objects {
		obj := map[string]any{"oid": o.OID, "size": o.Size}
		if _, have := s.lfsObjects[o.OID]; !have {
			href := fmt.Sprintf("%s/lfs/%s/%d?X-Amz-Signature=signed", s.Storage.URL, o.OID, o.Size)
			upload := map[string]any{"href": href}
			if s.PartSize > 0 {
				header := map[string]string{"chunk_size": strconv.Itoa(s.PartSize)}
				for n, off := 1, int64(0); off < o.Size; n, off = n+1, off+int64(s.PartSize) {
					header[strconv.Itoa(n)] = fmt.Sprintf("%s/lfs/%s/%d/part/%d?X-Amz-Signature=signed", s.Storage.URL, o.OID, o.Size, n)
				}
				upload = map[string]any{"href": fmt.Sprintf("%s/lfs/%s/%d/complete?X-Amz-Signature=signed", s.Storage.URL, o.OID, o.Size), "header": header}
			}
			obj["actions"] = map[string]any{"upload": upload,
				"verify": map[string]any{"href": s.Hub.URL + "/datasets/" + repo + ".git/info/lfs/objects/verify"}}
		}
		objects = append(objects, obj)
	}
	w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
	json.NewEncoder(w).Encode(map[string]any{"transfer": "basic", "objects": objects})
}

func (s *Server) lfsVerify(w http.ResponseWriter, r *http.Request) {
	var req struct {
		OID  string `json:"oid"`
		Size int    `json:"size"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"message":"bad verify request"}`, http.StatusUnprocessableEntity)
		return
	}
	b, ok := s.lfsObjects[req.OID]
	if !ok || len(b) != req.Size {
		http.Error(w, `{"message":"object not uploaded"}`, http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}

// partKey names an uploaded part until the upload completes.
func partKey(oid string, n string) string { return oid + "#" + n }

// lfsStorage takes LFS uploads: PUT /lfs/{oid}/{size} (whole), PUT
// .../part/{n}, POST .../complete; the content must hash to the oid.
// The caller holds s.mu.
func (s *Server) lfsStorage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("X-Amz-Signature") != "signed" {
		http.Error(w, "unsigned", http.StatusForbidden)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/lfs/"), "/")
	if len(parts) < 2 {
		http.Error(w, "no such object", http.StatusNotFound)
		return
	}
	oid, size := parts[0], parts[1]
	switch {
	case len(parts) == 2 && r.Method == http.MethodPut:
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if sha256Hex(b) != oid || strconv.Itoa(len(b)) != size {
			http.Error(w, "content does not match the oid", http.StatusBadRequest)
			return
		}
		s.lfsObjects[oid] = b
		w.Header().Set("ETag", `"`+etag(b)+`"`)
	case len(parts) == 4 && parts[2] == "part" && r.Method == http.MethodPut:
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		s.lfsObjects[partKey(oid, parts[3])] = b
		w.Header().Set("ETag", `"`+etag(b)+`"`)
	case len(parts) == 3 && parts[2] == "complete" && r.Method == http.MethodPost:
		var req struct {
			OID   string `json:"oid"`
			Parts []struct {
				PartNumber int    `json:"partNumber"`
				ETag       string `json:"etag"`
			} `json:"parts"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.OID != oid {
			http.Error(w, "bad completion", http.StatusBadRequest)
			return
		}
		var all []byte
		for i, p := range req.Parts {
			b, ok := s.lfsObjects[partKey(oid, strconv.Itoa(p.PartNumber))]
			if !ok || p.PartNumber != i+1 || p.ETag != etag(b) {
				http.Error(w, "missing or mismatched part", http.StatusBadRequest)
				return
			}
			all = append(all, b...)
		}
		if sha256Hex(all) != oid || strconv.Itoa(len(all)) != size {
			http.Error(w, "content does not match the oid", http.StatusBadRequest)
			return
		}
		s.lfsObjects[oid] = all
	default:
		http.Error(w, "no such object", http.StatusNotFound)
	}
}

func (s *Server) commitAPI(w http.ResponseWriter, r *http.Request, repo, rev string) {
	if !s.exists(repo) {
		notFound(w, "RepoNotFound")
		return
	}
	if r.Header.Get("Content-Type") != "application/x-ndjson" {
		http.Error(w, `{"error":"expected application/x-ndjson"}`, http.StatusBadRequest)
		return
	}
	c := Commit{Repo: repo, Revision: rev}
	type file struct {
		path string
		b    []byte
		lfs  bool
	}
	var files []file
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 256<<20)
	for first := true; sc.Scan(); first = false {
		var line struct {
			Key   string `json:"key"`
			Value struct {
				Summary, Description, ParentCommit string
				Path, Content, Encoding, Algo, OID string
				Size                               int
			} `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			http.Error(w, `{"error":"bad ndjson line"}`, http.StatusBadRequest)
			return
		}
		v := line.Value
		switch {
		case first && line.Key == "header":
			c.Summary, c.Description, c.Parent = v.Summary, v.Description, v.ParentCommit
		case line.Key == "file" && v.Encoding == "base64":
			b, err := base64.StdEncoding.DecodeString(v.Content)
			if err != nil {
				http.Error(w, `{"error":"bad base64"}`, http.StatusBadRequest)
				return
			}
			files = append(files, file{v.Path, b, false})
		case line.Key == "lfsFile" && v.Algo == "sha256":
			b, ok := s.lfsObjects[v.OID]
			if !ok || len(b) != v.Size {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "LFS object " + v.OID + " was not uploaded"})
				return
			}
			files = append(files, file{v.Path, b, true})
		default:
			http.Error(w, `{"error":"unexpected ndjson line `+line.Key+`"}`, http.StatusBadRequest)
			return
		}
	}
	if c.Summary == "" {
		http.Error(w, `{"error":"the commit has no header"}`, http.StatusBadRequest)
		return
	}
	base, sha, ok := s.commit(repo, rev)
	if !ok {
		notFound(w, "RevisionNotFound")
		return
	}
	if c.Parent != "" && c.Parent != sha {
		writeJSON(w, http.StatusPreconditionFailed, map[string]string{"error": "A commit has happened since. Please refresh and try again."})
		return
	}
	target := base
	if r.URL.Query().Get("create_pr") == "1" {
		s.prs[repo]++
		target = fmt.Sprintf("refs/pr/%d", s.prs[repo])
		for p, b := range s.revisionFiles(repo, base) {
			s.files[repo+"@"+target+":"+p] = b
			s.lfsFiles[repo+"@"+target+":"+p] = s.lfsFiles[repo+"@"+base+":"+p]
		}
	}
	for _, f := range files {
		key := repo + "@" + target + ":" + f.path
		s.files[key] = f.b
		s.lfsFiles[key] = f.lfs
		c.Files = append(c.Files, f.path)
		if f.lfs {
			c.LFS = append(c.LFS, f.path)
		}
	}
	c.Revision = target
	s.Commits = append(s.Commits, c)
	newSHA := commitID(repo, fmt.Sprintf("%s#%d", target, len(s.Commits)))
	s.heads[repo+"@"+target] = newSHA
	res := map[string]any{"commitUrl": s.Hub.URL + "/datasets/" + repo + "/commit/" + newSHA, "commitOid": newSHA}
	if strings.HasPrefix(target, "refs/pr/") {
		res["pullRequestUrl"] = fmt.Sprintf("%s/datasets/%s/discussions/%d", s.Hub.URL, repo, s.prs[repo])
	}
	writeJSON(w, http.StatusOK, res)
}

// validateYAML serves POST /api/validate-yaml: a card whose metadata
// block is not a YAML mapping is a 400 with the errors listed.
func validateYAML(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content  string `json:"content"`
		RepoType string `json:"repoType"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	report := map[string]any{"errors": []any{}, "warnings": []any{}}
	content := strings.TrimLeft(req.Content, " \t\r\n")
	if rest, ok := strings.CutPrefix(content, "---\n"); ok {
		if block, _, ok := strings.Cut(rest, "\n---"); ok {
			var meta any
			if err := yaml.Unmarshal([]byte(block), &meta); err != nil {
				report["errors"] = []any{map[string]string{"message": "invalid YAML: " + err.Error()}}
			} else if _, isMap := meta.(map[string]any); !isMap && meta != nil {
				report["errors"] = []any{map[string]string{"message": "metadata must be a mapping"}}
			}
		}
	}
	status := http.StatusOK
	if len(report["errors"].([]any)) > 0 {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, report)
}
