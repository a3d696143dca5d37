// Package hubtest is a local Hugging Face Hub for tests, written from the
// Hub's documented API: the parquet listing of a dataset's config and
// split, a repository's tree at a revision, and file downloads through
// /resolve/, redirected to a separate storage host as the Hub redirects
// to its CDN. It can demand a token, cut a download short, rate-limit,
// and counts what it served.
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// Server is a fake Hub and its storage host.
type Server struct {
	Hub, Storage *httptest.Server
	// Token, when set, is required (as a bearer token) by every Hub request.
	Token string
	// ReadToken, when set, is accepted for reading and refused (403) for
	// every write.
	ReadToken string
	// LFSThreshold is the size from which preupload sends a file to LFS
	// (default 10 MiB, as the Hub); a file with a NUL in its sample goes
	// there whatever its size.
	LFSThreshold int64
	// PartSize, when set, makes the LFS batch answer ask for multipart
	// uploads of this many bytes a part.
	PartSize int

	repos       map[string]bool             // created repos (the ones files were added to exist too)
	heads       map[string]string           // "repo@revision" → commit id, once committed to
	lfsObjects  map[string][]byte           // sha256 → content, uploaded to storage
	lfsFiles    map[string]bool             // "repo@revision:path" stored in LFS
	collections map[string][]CollectionItem // slug → items
	prs         map[string]int              // repo → pull requests opened
	// Commits records every commit made through the API, in order.
	Commits []Commit

	mu      sync.Mutex
	files   map[string][]byte // "repo@revision:path" → content
	parquet map[string][]string
	corrupt map[string]bool
	// Faults are served by the Hub (refusals) and the storage host
	// (downloads).
	Faults
	// Downloads counts storage GETs by file path; Ranges the ones that
	// asked for a range; StorageAuth the storage requests that carried
	// an Authorization header (there must be none).
	Downloads   map[string]int
	Ranges      map[string]int
	StorageAuth int
}

// New starts a fake Hub; stop it with Close.
func New() *Server {
	s := &Server{files: map[string][]byte{}, parquet: map[string][]string{}, corrupt: map[string]bool{},
		Downloads: map[string]int{}, Ranges: map[string]int{},
		repos: map[string]bool{}, heads: map[string]string{}, lfsObjects: map[string][]byte{}, lfsFiles: map[string]bool{},
		collections: map[string][]CollectionItem{}, prs: map[string]int{}}
	s.Storage = httptest.NewServer(http.HandlerFunc(s.storage))
	s.Hub = httptest.NewServer(http.HandlerFunc(s.hub))
	return s
}

// Close stops both hosts.
func (s *Server) Close() {
	s.Hub.Close()
	s.Storage.Close()
}

// AddParquet publishes the parquet conversion of repo's config/split,
// one shard per content, as the Hub's refs/convert/parquet branch holds it.
func (s *Server) AddParquet(repo, config, split string, shards ...[]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var urls []string
	for i, b := range shards {
		s.files[repo+"@refs/convert/parquet:"+fmt.Sprintf("%s/%s/%04d.parquet", config, split, i)] = b
		urls = append(urls, fmt.Sprintf("%s/api/datasets/%s/parquet/%s/%s/%d.parquet", s.Hub.URL, repo, config, split, i))
	}
	s.parquet[repo+"/"+config+"/"+split] = urls
}

// AddFile puts a file in repo at revision.
func (s *Server) AddFile(repo, revision, path string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[repo+"@"+revision+":"+path] = b
}

// Corrupt makes the storage host serve path with its first byte changed
// from now on, as a broken cache or proxy might.
func (s *Server) Corrupt(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corrupt[path] = true
}

func (s *Server) hub(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status, ok := s.Refusal(w); ok {
		http.Error(w, `{"error":"`+http.StatusText(status)+`"}`, status)
		return
	}
	readOnly := s.ReadToken != "" && r.Header.Get("Authorization") == "Bearer "+s.ReadToken
	if readOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, `{"error":"You don't have the rights to write to this repository"}`, http.StatusForbidden)
		return
	}
	if s.Token != "" && !readOnly && r.Header.Get("Authorization") != "Bearer "+s.Token {
		if r.Header.Get("Authorization") == "" {
			http.Error(w, `{"error":"Access to dataset is restricted. You must have access to it and be authenticated to access it. Please log in."}`, http.StatusUnauthorized)
		} else {
			http.Error(w, `{"error":"Invalid credentials in Authorization header"}`, http.StatusUnauthorized)
		}
		return
	}
	p := r.URL.EscapedPath()
	if s.write(w, r, p) {
		return
	}
	if rest, ok := strings.CutPrefix(p, "/api/datasets/"); ok && !strings.Contains(rest, "/parquet/") && !strings.Contains(rest, "/tree/") {
		repo, rev, _ := strings.Cut(rest, "/revision/")
		if rev == "" {
			rev = "main"
		}
		s.info(w, repo, unescape(rev))
		return
	}
	switch {
	case strings.HasPrefix(p, "/api/datasets/") && strings.Contains(p, "/parquet/"):
		s.parquetAPI(w, r, strings.TrimPrefix(p, "/api/datasets/"))
	case strings.HasPrefix(p, "/api/datasets/") && strings.Contains(p, "/tree/"):
		s.tree(w, r, strings.TrimPrefix(p, "/api/datasets/"))
	case strings.HasPrefix(p, "/datasets/") && strings.Contains(p, "/resolve/"):
		s.resolve(w, r, strings.TrimPrefix(p, "/datasets/"))
	default:
		notFound(w, "EntryNotFound")
	}
}

// parquetAPI serves GET /api/datasets/{repo}/parquet/{config}/{split}
// (the list of URLs) and .../{split}/{n}.parquet (a redirect to the shard).
func (s *Server) parquetAPI(w http.ResponseWriter, r *http.Request, rest string) {
	repo, tail, _ := strings.Cut(rest, "/parquet/")
	parts := strings.Split(tail, "/")
	switch len(parts) {
	case 2:
		urls, ok := s.parquet[repo+"/"+parts[0]+"/"+parts[1]]
		if !ok {
			http.Error(w, `{"error":"Not found."}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(urls)
	case 3:
		n, err := strconv.Atoi(strings.TrimSuffix(parts[2], ".parquet"))
		if err != nil {
			http.Error(w, `{"error":"Not found."}`, http.StatusNotFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/datasets/%s/resolve/refs%%2Fconvert%%2Fparquet/%s/%s/%04d.parquet", repo, parts[0], parts[1], n), http.StatusFound)
	default:
		http.Error(w, `{"error":"Not found."}`, http.StatusNotFound)
	}
}

// commit finds a revision of repo by name or by its commit id, and
// returns the name files are kept under and the commit id.
func (s *Server) commit(repo, rev string) (name, sha string, ok bool) {
	for key := range s.files {
		r, _, _ := strings.Cut(strings.TrimPrefix(key, repo+"@"), ":")
		if !strings.HasPrefix(key, repo+"@") {
			continue
		}
		if r == rev || s.sha(repo, r) == rev {
			return r, s.sha(repo, r), true
		}
	}
	return "", "", false
}

// sha is the commit a revision of repo points at: the last one made
// through the API, else one made up from the names.
func (s *Server) sha(repo, rev string) string {
	if h, ok := s.heads[repo+"@"+rev]; ok {
		return h
	}
	return commitID(repo, rev)
}

// commitID is a revision's commit: itself when it is one, else made up.
func commitID(repo, rev string) string {
	if len(rev) == 40 && strings.Trim(rev, "0123456789abcdef") == "" {
		return rev
	}
	return fmt.Sprintf("%x", sha1.Sum([]byte(repo+"@"+rev)))
}

// revisionFiles are repo's files at a revision name, by path.
func (s *Server) revisionFiles(repo, name string) map[string][]byte {
	out := map[string][]byte{}
	for key, b := range s.files {
		if r, p, ok := strings.Cut(strings.TrimPrefix(key, repo+"@"), ":"); ok && strings.HasPrefix(key, repo+"@") && r == name {
			out[p] = b
		}
	}
	return out
}

// notFound answers as the Hub does, with the X-Error-Code the
// huggingface_hub client reads.
func notFound(w http.ResponseWriter, code string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", code)
	http.Error(w, `{"error":"`+code+`"}`, http.StatusNotFound)
}

// info serves GET /api/datasets/{repo}[/revision/{rev}].
func (s *Server) info(w http.ResponseWriter, repo, rev string) {
	name, sha, ok := s.commit(repo, rev)
	if !ok {
		notFound(w, "RevisionNotFound")
		return
	}
	type sibling struct {
		Name string `json:"rfilename"`
	}
	siblings := []sibling{}
	for p := range s.revisionFiles(repo, name) {
		siblings = append(siblings, sibling{p})
	}
	slices.SortFunc(siblings, func(a, b sibling) int { return strings.Compare(a.Name, b.Name) })
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": repo, "sha": sha, "private": false, "gated": false, "disabled": false, "siblings": siblings})
}

type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int    `json:"size"`
	OID  string `json:"oid"`
}

// tree serves GET /api/datasets/{repo}/tree/{rev}[/{folder}], a folder's
// files and folders (all below it with recursive=true).
func (s *Server) tree(w http.ResponseWriter, r *http.Request, rest string) {
	repo, tail, _ := strings.Cut(rest, "/tree/")
	rev, folder, _ := strings.Cut(tail, "/")
	name, sha, ok := s.commit(repo, unescape(rev))
	if !ok {
		notFound(w, "RevisionNotFound")
		return
	}
	files := s.revisionFiles(repo, name)
	folder = strings.Trim(unescape(folder), "/")
	prefix := ""
	if folder != "" {
		prefix = folder + "/"
	}
	recursive := r.URL.Query().Get("recursive") == "true" || r.URL.Query().Get("recursive") == "True"
	seen := map[string]bool{}
	entries := []treeEntry{}
	paths := slices.Sorted(maps.Keys(files))
	for _, p := range paths {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(p, prefix), "/")
		for i := 1; i < len(parts) && (recursive || i == 1); i++ {
			d := prefix + strings.Join(parts[:i], "/")
			if !seen[d] {
				seen[d] = true
				entries = append(entries, treeEntry{"directory", d, 0, etag([]byte("tree:" + d))})
			}
		}
		if recursive || len(parts) == 1 {
			entries = append(entries, treeEntry{"file", p, len(files[p]), etag(files[p])})
		}
	}
	if folder != "" && len(entries) == 0 {
		notFound(w, "EntryNotFound")
		return
	}
	w.Header().Set("X-Repo-Commit", sha)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(entries)
}

// resolve redirects to the storage host with the commit, ETag and size
// the Hub sends as X-Repo-Commit, X-Linked-Etag and X-Linked-Size.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request, rest string) {
	repo, tail, _ := strings.Cut(rest, "/resolve/")
	rev, path, _ := strings.Cut(tail, "/")
	name, sha, ok := s.commit(repo, unescape(rev))
	if !ok {
		notFound(w, "RevisionNotFound")
		return
	}
	key := repo + "@" + name + ":" + unescape(path)
	b, ok := s.files[key]
	w.Header().Set("X-Repo-Commit", sha)
	if !ok {
		notFound(w, "EntryNotFound")
		return
	}
	if s.lfsFiles[key] {
		w.Header().Set("X-Linked-Etag", `"`+sha256Hex(b)+`"`)
	} else {
		w.Header().Set("X-Linked-Etag", `"`+etag(b)+`"`)
	}
	w.Header().Set("X-Linked-Size", strconv.Itoa(len(b)))
	w.Header().Set("ETag", `"`+etag(b)+`"`)
	w.Header().Set("Location", s.Storage.URL+"/blob/"+strings.ReplaceAll(key, "/", "%2F")+"?X-Amz-Signature=signed")
	w.WriteHeader(http.StatusFound)
}

func (s *Server) storage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if r.Header.Get("Authorization") != "" {
		s.StorageAuth++
	}
	if strings.HasPrefix(r.URL.Path, "/lfs/") {
		defer s.mu.Unlock()
		s.lfsStorage(w, r)
		return
	}
	key := unescape(strings.TrimPrefix(r.URL.EscapedPath(), "/blob/"))
	b, ok := s.files[key]
	_, path, _ := strings.Cut(key, ":")
	if s.corrupt[path] && len(b) > 0 {
		b = append([]byte{b[0] ^ 1}, b[1:]...)
	}
	var d Download
	if r.Method == http.MethodGet {
		s.Downloads[path]++
		if r.Header.Get("Range") != "" {
			s.Ranges[path]++
		}
		d = s.NextDownload(path, r)
	}
	s.mu.Unlock()
	if !ok || r.URL.Query().Get("X-Amz-Signature") != "signed" {
		http.Error(w, "no such blob", http.StatusForbidden)
		return
	}
	w.Header().Set("ETag", `"`+etag(b)+`"`)
	d.Serve(w, r, b)
}

func unescape(s string) string {
	return strings.NewReplacer("%2F", "/", "%2f", "/").Replace(s)
}

func etag(b []byte) string {
	return fmt.Sprintf("%x", sha1.Sum(b))
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Column is a parquet column as the datasets library writes one:
// optional, of type "string", "int64", "double", "float", "bool" or
// "list<string>".
type Column struct{ Name, Type string }

// Parquet writes rows (column name to value; nil for null) as a parquet
// file with these columns, every value with its definition level, so an
// empty string or list stays one (parquet-go's writer would write a Go
// zero value as null).
func Parquet(cols []Column, rows []map[string]any) ([]byte, error) {
	group := parquet.Group{}
	types := map[string]string{}
	for _, c := range cols {
		var n parquet.Node
		switch c.Type {
		case "string":
			n = parquet.String()
		case "int64":
			n = parquet.Int(64)
		case "double":
			n = parquet.Leaf(parquet.DoubleType)
		case "float":
			n = parquet.Leaf(parquet.FloatType)
		case "bool":
			n = parquet.Leaf(parquet.BooleanType)
		case "list<string>":
			n = parquet.List(parquet.Optional(parquet.String()))
		default:
			return nil, fmt.Errorf("hubtest: column %s: unknown type %q", c.Name, c.Type)
		}
		group[c.Name] = parquet.Optional(n)
		types[c.Name] = c.Type
	}
	schema := parquet.NewSchema("hf", group)
	var out []parquet.Row
	for i, r := range rows {
		var row parquet.Row
		for col, f := range schema.Fields() {
			v := r[f.Name()]
			if v == nil {
				row = append(row, parquet.NullValue().Level(0, 0, col))
				continue
			}
			if types[f.Name()] != "list<string>" {
				row = append(row, parquet.ValueOf(v).Level(0, 1, col))
				continue
			}
			items, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("hubtest: row %d column %s: %T is not a list", i, f.Name(), v)
			}
			if len(items) == 0 {
				row = append(row, parquet.NullValue().Level(0, 1, col))
			}
			for j, it := range items {
				rep := 1
				if j == 0 {
					rep = 0
				}
				if it == nil {
					row = append(row, parquet.NullValue().Level(rep, 2, col))
				} else {
					row = append(row, parquet.ValueOf(it).Level(rep, 3, col))
				}
			}
		}
		out = append(out, row)
	}
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, schema)
	if _, err := w.WriteRows(out); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ParquetFromJSON writes a JSON list of row objects as a parquet file,
// each column typed as the datasets library would type it from its first
// non-null value: string, int64 (a number without a fraction or
// exponent), double, bool or list<string>.
func ParquetFromJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var rows []map[string]any
	if err := dec.Decode(&rows); err != nil {
		return nil, fmt.Errorf("hubtest: rows: %w", err)
	}
	types := map[string]string{}
	var cols []Column
	for _, r := range rows {
		for k, v := range r {
			if _, seen := types[k]; seen || v == nil {
				continue
			}
			switch v := v.(type) {
			case string:
				types[k] = "string"
			case bool:
				types[k] = "bool"
			case json.Number:
				types[k] = "int64"
				if strings.ContainsAny(v.String(), ".eE") {
					types[k] = "double"
				}
			case []any:
				types[k] = "list<string>"
			default:
				return nil, fmt.Errorf("hubtest: column %s: cannot type %T", k, v)
			}
			cols = append(cols, Column{Name: k, Type: types[k]})
		}
	}
	for _, r := range rows {
		for k, v := range r {
			if n, ok := v.(json.Number); ok {
				var err error
				if types[k] == "double" {
					r[k], err = n.Float64()
				} else {
					r[k], err = n.Int64()
				}
				if err != nil {
					return nil, fmt.Errorf("hubtest: column %s: %w", k, err)
				}
			}
		}
	}
	return Parquet(cols, rows)
}
