package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/progress"
)

// The write half of the Hub's API, as huggingface_hub's HfApi uses it:
// create a repository, read a repository's head commit, add it to a
// collection, and commit files (the preupload call sorts them into inline
// and LFS files; LFS content goes to the storage the LFS batch API names,
// then one NDJSON commit names every file).

// writeHint explains a refusal of a write call.
func (c *Client) writeHint(repo string) func(int) string {
	return func(status int) string {
		switch status {
		case http.StatusUnauthorized:
			if c.Token == "" {
				return "uploading needs a token: set hf_token in env.yaml (or HF_TOKEN) to a token with write access"
			}
			return "the Hub refused the token: check that hf_token (or HF_TOKEN) is a valid, unexpired token with write access"
		case http.StatusForbidden:
			return fmt.Sprintf("the token's account may not write to %s: use a token with write access to its organization, or +create_pr=true (--create-pr) to open a pull request", repo)
		case http.StatusTooManyRequests:
			return "the Hub is rate-limiting these requests; wait and run again"
		}
		return ""
	}
}

// call makes one API request with retries; body makes the request body
// afresh for each try. The answer's body is returned for a 2xx status.
func (c *Client) call(ctx context.Context, method, u, contentType string, body func() (io.Reader, error), hint func(int) string) ([]byte, error) {
	var out []byte
	err := c.retry(ctx, u, func() error {
		var r io.Reader
		if body != nil {
			var err error
			if r, err = body(); err != nil {
				return err
			}
		}
		req, err := http.NewRequestWithContext(ctx, method, u, r)
		if err != nil {
			return err
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if strings.Contains(u, ".git/info/lfs/") {
			req.Header.Set("Accept", "application/vnd.git-lfs+json")
		}
		c.authorize(req)
		resp, err := c.httpClient().Do(req)
		if err != nil {
			return Transient{err}
		}
		defer resp.Body.Close()
		if err := c.statusError(u, resp, hint); err != nil {
			var se *StatusError
			if errors.As(err, &se) {
				se.Detail = errorDetail(resp)
			}
			return err
		}
		out, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return Transient{err}
		}
		return nil
	})
	return out, err
}

// errorDetail is the message a Hub error carries (X-Error-Message, or the
// JSON body's "error"), short and on one line.
func errorDetail(resp *http.Response) string {
	msg := resp.Header.Get("X-Error-Message")
	if msg == "" {
		var body struct {
			Error  any                        `json:"error"`
			Errors []struct{ Message string } `json:"errors"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(b, &body) == nil {
			if s, ok := body.Error.(string); ok {
				msg = s
			}
			for _, e := range body.Errors {
				msg = strings.TrimSpace(msg + "; " + e.Message)
			}
			msg = strings.TrimPrefix(msg, "; ")
		}
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}

func jsonBody(v any) func() (io.Reader, error) {
	b, err := json.Marshal(v)
	return func() (io.Reader, error) { return bytes.NewReader(b), err }
}

// RepoSHA is the commit a dataset repository's revision points at; ""
// revision is the default branch.
func (c *Client) RepoSHA(ctx context.Context, repo, revision string) (string, error) {
	if err := checkRepo(repo); err != nil {
		return "", err
	}
	u := c.endpoint() + "/api/datasets/" + repo
	if revision != "" {
		u += "/revision/" + url.PathEscape(revision)
	}
	b, err := c.call(ctx, http.MethodGet, u, "", nil, func(status int) string {
		if status == http.StatusNotFound {
			return fmt.Sprintf("the Hub has no dataset %s at revision %q (or the token cannot see it)", repo, revisionName(revision))
		}
		return c.writeHint(repo)(status)
	})
	if err != nil {
		return "", err
	}
	var info struct {
		SHA string `json:"sha"`
	}
	if err := json.Unmarshal(b, &info); err != nil || info.SHA == "" {
		return "", fmt.Errorf("%s: the answer names no commit (sha)", u)
	}
	return info.SHA, nil
}

func revisionName(r string) string {
	if r == "" {
		return "main"
	}
	return r
}

// CreateDatasetRepo creates a dataset repository; one that exists
// already is no error (created is then false), even when the token may
// not create repositories there but can see it, as huggingface_hub's
// exist_ok treats a 403.
func (c *Client) CreateDatasetRepo(ctx context.Context, repo string, private bool) (created bool, err error) {
	if err := checkRepo(repo); err != nil {
		return false, err
	}
	org, name, ok := strings.Cut(repo, "/")
	if !ok {
		org, name = "", repo
	}
	payload := map[string]any{"name": name, "type": "dataset"}
	if org != "" {
		payload["organization"] = org
	}
	if private {
		payload["visibility"] = "private"
	}
	u := c.endpoint() + "/api/repos/create"
	_, err = c.call(ctx, http.MethodPost, u, "application/json", jsonBody(payload), c.writeHint(repo))
	var se *StatusError
	switch {
	case errors.As(err, &se) && se.Status == http.StatusConflict:
		return false, nil
	case errors.As(err, &se) && se.Status == http.StatusForbidden:
		if _, infoErr := c.RepoSHA(ctx, repo, ""); infoErr == nil {
			return false, nil
		}
	}
	return err == nil, err
}

// CollectionItem is one entry of a collection.
type CollectionItem struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// CollectionItems lists the items of a collection, by its slug
// (owner/title-id).
func (c *Client) CollectionItems(ctx context.Context, slug string) ([]CollectionItem, error) {
	u, err := c.collectionURL(slug)
	if err != nil {
		return nil, err
	}
	b, err := c.call(ctx, http.MethodGet, u, "", nil, func(status int) string {
		if status == http.StatusNotFound {
			return fmt.Sprintf("the Hub has no collection %s (check hf_organization, hf_collection_name and hf_collection_slug)", slug)
		}
		return c.writeHint(slug)(status)
	})
	if err != nil {
		return nil, err
	}
	var col struct {
		Items []CollectionItem `json:"items"`
	}
	if err := json.Unmarshal(b, &col); err != nil {
		return nil, fmt.Errorf("%s: the answer is not a collection: %w", u, err)
	}
	return col.Items, nil
}

// AddCollectionItem adds a dataset repository to a collection.
func (c *Client) AddCollectionItem(ctx context.Context, slug, repo string) error {
	u, err := c.collectionURL(slug)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, http.MethodPost, u+"/items", "application/json",
		jsonBody(map[string]any{"item": map[string]string{"id": repo, "type": "dataset"}}), c.writeHint(slug))
	return err
}

func (c *Client) collectionURL(slug string) (string, error) {
	owner, rest, ok := strings.Cut(slug, "/")
	if !ok || !namePart.MatchString(owner) || !namePart.MatchString(rest) || strings.Contains(slug, "..") {
		return "", fmt.Errorf("collection %q: a collection slug is owner/title-id", slug)
	}
	return c.endpoint() + "/api/collections/" + owner + "/" + rest, nil
}

// CommitFile is a file of a commit: a local file, or Content.
type CommitFile struct {
	PathInRepo string
	Local      string
	Content    []byte
}

func (f CommitFile) open() (io.ReadSeekCloser, int64, error) {
	if f.Local == "" {
		return nopCloser{bytes.NewReader(f.Content)}, int64(len(f.Content)), nil
	}
	file, err := os.Open(f.Local)
	if err != nil {
		return nil, 0, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, 0, err
	}
	return file, st.Size(), nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// CommitRequest is one commit to a dataset repository.
type CommitRequest struct {
	Repo string
	// Revision is the branch committed to; "" is the default branch.
	Revision string
	// ParentCommit makes the Hub refuse the commit when the branch has
	// moved since (HfApi's parent_commit).
	ParentCommit string
	Summary      string
	Description  string
	CreatePR     bool
	Files        []CommitFile
}

// CommitResult is the Hub's answer to a commit.
type CommitResult struct {
	CommitURL      string `json:"commitUrl"`
	CommitOID      string `json:"commitOid"`
	PullRequestURL string `json:"pullRequestUrl"`
}

type upload struct {
	file   CommitFile
	size   int64
	sample []byte
	sha    string // hex sha256, LFS files only
	lfs    bool
}

// Commit uploads the files and commits them in one commit.
func (c *Client) Commit(ctx context.Context, req CommitRequest) (CommitResult, error) {
	if err := checkRepo(req.Repo); err != nil {
		return CommitResult{}, err
	}
	rev := url.PathEscape(revisionName(req.Revision))
	query := ""
	if req.CreatePR {
		query = "?create_pr=1"
	}
	ups := make([]*upload, len(req.Files))
	var files []map[string]any
	for i, f := range req.Files {
		r, size, err := f.open()
		if err != nil {
			return CommitResult{}, err
		}
		sample := make([]byte, 512)
		n, err := io.ReadFull(r, sample)
		r.Close()
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return CommitResult{}, fmt.Errorf("%s: %w", f.Local, err)
		}
		ups[i] = &upload{file: f, size: size, sample: sample[:n]}
		files = append(files, map[string]any{"path": f.PathInRepo, "sample": base64.StdEncoding.EncodeToString(sample[:n]), "size": size})
	}
	hint := c.writeHint(req.Repo)
	// A card's metadata is checked before any upload, as huggingface_hub
	// checks it: failing then costs nothing.
	for _, f := range req.Files {
		if f.PathInRepo == "README.md" {
			if err := c.validateCard(ctx, f); err != nil {
				return CommitResult{}, err
			}
			break
		}
	}
	b, err := c.call(ctx, http.MethodPost, c.endpoint()+"/api/datasets/"+req.Repo+"/preupload/"+rev+query,
		"application/json", jsonBody(map[string]any{"files": files}), hint)
	if err != nil {
		return CommitResult{}, err
	}
	var modes struct {
		Files []struct {
			Path         string `json:"path"`
			UploadMode   string `json:"uploadMode"`
			ShouldIgnore bool   `json:"shouldIgnore"`
		} `json:"files"`
	}
	if err := json.Unmarshal(b, &modes); err != nil {
		return CommitResult{}, fmt.Errorf("preupload of %s: the answer is not a list of upload modes: %w", req.Repo, err)
	}
	mode := map[string]string{}
	for _, m := range modes.Files {
		mode[m.Path] = m.UploadMode
		if m.ShouldIgnore {
			return CommitResult{}, fmt.Errorf("%s: the repository's .gitignore ignores %s", req.Repo, m.Path)
		}
	}
	var lfs []*upload
	for _, u := range ups {
		switch mode[u.file.PathInRepo] {
		case "lfs":
			// An empty file cannot be stored in LFS; huggingface_hub commits it inline.
			if u.size > 0 {
				u.lfs = true
				if u.sha, err = u.sha256(); err != nil {
					return CommitResult{}, err
				}
				lfs = append(lfs, u)
			}
		case "regular":
		default:
			return CommitResult{}, fmt.Errorf("preupload of %s: no upload mode for %s", req.Repo, u.file.PathInRepo)
		}
	}
	if len(lfs) > 0 {
		if err := c.uploadLFS(ctx, req, lfs); err != nil {
			return CommitResult{}, err
		}
	}
	body, err := commitPayload(req, ups)
	if err != nil {
		return CommitResult{}, err
	}
	b, err = c.call(ctx, http.MethodPost, c.endpoint()+"/api/datasets/"+req.Repo+"/commit/"+rev+query, "application/x-ndjson",
		func() (io.Reader, error) { return bytes.NewReader(body), nil },
		func(status int) string {
			if status == http.StatusPreconditionFailed || status == http.StatusConflict {
				return fmt.Sprintf("%s moved on while uploading (another commit landed on %s); run again", req.Repo, revisionName(req.Revision))
			}
			return hint(status)
		})
	if err != nil {
		return CommitResult{}, err
	}
	var res CommitResult
	if err := json.Unmarshal(b, &res); err != nil {
		return CommitResult{}, fmt.Errorf("commit to %s: the answer is not a commit: %w", req.Repo, err)
	}
	return res, nil
}

func (u *upload) sha256() (string, error) {
	r, _, err := u.file.open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// commitPayload is the NDJSON body of a commit: a header line, then a
// line per file, inline (base64) or by its LFS object id.
func commitPayload(req CommitRequest, ups []*upload) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	header := map[string]any{"summary": req.Summary, "description": req.Description}
	if req.ParentCommit != "" {
		header["parentCommit"] = req.ParentCommit
	}
	if err := enc.Encode(map[string]any{"key": "header", "value": header}); err != nil {
		return nil, err
	}
	for _, u := range ups {
		var line map[string]any
		if u.lfs {
			line = map[string]any{"key": "lfsFile", "value": map[string]any{"path": u.file.PathInRepo, "algo": "sha256", "oid": u.sha, "size": u.size}}
		} else {
			r, _, err := u.file.open()
			if err != nil {
				return nil, err
			}
			content, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				return nil, err
			}
			line = map[string]any{"key": "file", "value": map[string]any{"content": base64.StdEncoding.EncodeToString(content), "path": u.file.PathInRepo, "encoding": "base64"}}
		}
		if err := enc.Encode(line); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

type lfsAction struct {
	Href   string            `json:"href"`
	Header map[string]string `json:"header"`
}

// uploadLFS asks the LFS batch API where each object goes, puts the
// content there (in parts when the answer asks for parts) and asks the
// Hub to verify it. An object the Hub already has needs no upload.
func (c *Client) uploadLFS(ctx context.Context, req CommitRequest, ups []*upload) error {
	var objects []map[string]any
	for _, u := range ups {
		objects = append(objects, map[string]any{"oid": u.sha, "size": u.size})
	}
	payload := map[string]any{"operation": "upload", "transfers": []string{"basic", "multipart"}, "objects": objects, "hash_algo": "sha256"}
	if req.Revision != "" {
		payload["ref"] = map[string]string{"name": req.Revision}
	}
	u := c.endpoint() + "/datasets/" + req.Repo + ".git/info/lfs/objects/batch"
	b, err := c.call(ctx, http.MethodPost, u, "application/vnd.git-lfs+json", jsonBody(payload), c.writeHint(req.Repo))
	if err != nil {
		return err
	}
	var batch struct {
		Objects []struct {
			OID     string `json:"oid"`
			Actions *struct {
				Upload *lfsAction `json:"upload"`
				Verify *lfsAction `json:"verify"`
			} `json:"actions"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"objects"`
	}
	if err := json.Unmarshal(b, &batch); err != nil {
		return fmt.Errorf("%s: the answer is not an LFS batch: %w", u, err)
	}
	byOID := map[string]*upload{}
	for _, up := range ups {
		byOID[up.sha] = up
	}
	for _, o := range batch.Objects {
		up := byOID[o.OID]
		if up == nil {
			return fmt.Errorf("%s: the answer names an object gym did not ask about", u)
		}
		if o.Error != nil {
			return fmt.Errorf("LFS upload of %s refused: %d %s", up.file.PathInRepo, o.Error.Code, o.Error.Message)
		}
		if o.Actions == nil || o.Actions.Upload == nil {
			continue // already stored
		}
		if err := c.putLFS(ctx, up, *o.Actions.Upload); err != nil {
			return err
		}
		if v := o.Actions.Verify; v != nil {
			if _, err := c.checkFileURL(v.Href); err != nil {
				return fmt.Errorf("LFS verify of %s: %w", up.file.PathInRepo, err)
			}
			if _, err := c.call(ctx, http.MethodPost, v.Href, "application/vnd.git-lfs+json",
				jsonBody(map[string]any{"oid": up.sha, "size": up.size}), c.writeHint(req.Repo)); err != nil {
				return err
			}
		}
	}
	return nil
}

// putLFS puts an object's content where the batch answer says: whole,
// or in chunk_size parts whose URLs the header lists by part number,
// completed by a POST to href. The storage URLs are signed: no token
// goes there, and errors name the file, not the URL.
func (c *Client) putLFS(ctx context.Context, up *upload, a lfsAction) error {
	meter := c.meter("Uploading "+up.file.PathInRepo, up.size)
	defer meter.Finish()
	chunk := a.Header["chunk_size"]
	if chunk == "" {
		return c.putPart(ctx, up, a.Href, 0, up.size, meter)
	}
	size, err := strconv.ParseInt(chunk, 10, 64)
	if err != nil || size <= 0 {
		return fmt.Errorf("LFS upload of %s: chunk_size %q is not a positive integer", up.file.PathInRepo, chunk)
	}
	type part struct {
		PartNumber int    `json:"partNumber"`
		ETag       string `json:"etag"`
	}
	var parts []part
	for n, off := 1, int64(0); off < up.size; n, off = n+1, off+size {
		href, ok := a.Header[strconv.Itoa(n)]
		if !ok {
			return fmt.Errorf("LFS upload of %s: no URL for part %d", up.file.PathInRepo, n)
		}
		etag, err := c.putPartETag(ctx, up, href, off, min(size, up.size-off), meter)
		if err != nil {
			return err
		}
		parts = append(parts, part{n, etag})
	}
	_, err = c.call(ctx, http.MethodPost, a.Href, "application/vnd.git-lfs+json",
		jsonBody(map[string]any{"oid": up.sha, "parts": parts}), nil)
	return err
}

func (c *Client) putPart(ctx context.Context, up *upload, href string, off, n int64, meter progress.Meter) error {
	_, err := c.putPartETag(ctx, up, href, off, n, meter)
	return err
}

func (c *Client) putPartETag(ctx context.Context, up *upload, href string, off, n int64, meter progress.Meter) (string, error) {
	name := "LFS upload of " + up.file.PathInRepo
	var etag string
	err := c.retry(ctx, name, func() error {
		r, _, err := up.file.open()
		if err != nil {
			return err
		}
		defer r.Close()
		counted := &progress.Reader{R: io.NewSectionReader(readerAt{r}, off, n), Meter: meter}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, href, counted)
		if err != nil {
			return fmt.Errorf("%s: bad upload URL", name)
		}
		req.ContentLength = n
		c.authorize(req)
		resp, err := c.httpClient().Do(req)
		if err != nil {
			meter.Add(-counted.N) // a retry sends these bytes again
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return Transient{err}
		}
		defer resp.Body.Close()
		if err := c.statusError(name, resp, nil); err != nil {
			meter.Add(-counted.N)
			return err
		}
		etag = strings.Trim(resp.Header.Get("ETag"), `"`)
		return nil
	})
	return etag, err
}

// readerAt reads a seekable file at an offset, for a section of it.
type readerAt struct{ r io.ReadSeeker }

func (ra readerAt) ReadAt(p []byte, off int64) (int, error) {
	if _, err := ra.r.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return io.ReadFull(ra.r, p)
}

func (c *Client) meter(label string, total int64) progress.Meter {
	if c.Progress == nil {
		return progress.NoMeter
	}
	return c.Progress(label, total)
}

// validateCard asks the Hub whether a dataset card's metadata is valid
// (POST /api/validate-yaml): its errors fail the commit, its warnings
// are logged.
func (c *Client) validateCard(ctx context.Context, f CommitFile) error {
	r, _, err := f.open()
	if err != nil {
		return err
	}
	content, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return err
	}
	u := c.endpoint() + "/api/validate-yaml"
	var report struct {
		Errors   []struct{ Message string } `json:"errors"`
		Warnings []struct{ Message string } `json:"warnings"`
	}
	b, err := c.call(ctx, http.MethodPost, u, "application/json", jsonBody(map[string]string{"content": string(content), "repoType": "dataset"}), nil)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusBadRequest {
		return fmt.Errorf("invalid metadata in README.md: %s", se.Detail)
	}
	if err != nil {
		return err
	}
	if json.Unmarshal(b, &report) == nil && c.Log != nil {
		for _, w := range report.Warnings {
			fmt.Fprintf(c.Log, "Warning: README.md metadata: %s\n", w.Message)
		}
	}
	return nil
}
