// Package hub downloads dataset files from the Hugging Face Hub over its
// documented HTTP API: the parquet conversion of a dataset's config and
// split, and a repository's files at a pinned revision. Downloads are
// cached by ETag, resumed from a partial file, and retried on rate limits
// and server errors. The token is sent only to the Hub's own host, never
// to the storage a download is redirected to, and never written anywhere.
package hub

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nemo-gym-go/gym/internal/flock"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/progress"
)

// DefaultEndpoint is the Hub huggingface_hub talks to without HF_ENDPOINT.
const DefaultEndpoint = "https://huggingface.co"

// Client talks to one Hub endpoint.
type Client struct {
	// Endpoint is the Hub's base URL (HF_ENDPOINT).
	Endpoint string
	// Token is sent as a bearer token to Endpoint's host only; "" sends none.
	Token string
	// CacheDir holds downloaded files, one tree per endpoint host.
	CacheDir string
	// Offline uses only what CacheDir holds (HF_HUB_OFFLINE).
	Offline bool
	// HTTP makes the requests (default: a client with no overall timeout;
	// the context bounds a call).
	HTTP *http.Client
	// Retries caps retries of a rate-limited, failed or cut-off request
	// (default 5); Backoff is the first wait, doubled each time (default 1 s).
	Retries int
	Backoff time.Duration
	// Log receives a line per download and per retry; nil is silent.
	Log io.Writer
	// Progress, when set, meters each upload and download of a file.
	Progress func(label string, total int64) progress.Meter
}

// StatusError is an HTTP error from the Hub, with what to do about it.
type StatusError struct {
	URL    string
	Status int
	Hint   string
	// Detail is the server's own message, when it gave one.
	Detail string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// ErrNotCached is returned offline for a file the cache does not hold.
var ErrNotCached = errors.New("not in the cache, and HF_HUB_OFFLINE is set")

var namePart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// checkRepo refuses a repo id that is not owner/name (or name), so that
// no id can reach outside the cache or the API's paths.
func checkRepo(repo string) error {
	parts := strings.Split(repo, "/")
	if len(parts) > 2 {
		return fmt.Errorf("dataset %q: a Hub repo id is owner/name", repo)
	}
	for _, p := range parts {
		if !namePart.MatchString(p) || strings.Contains(p, "..") {
			return fmt.Errorf("dataset %q: %q is not a valid Hub name", repo, p)
		}
	}
	return nil
}

func checkName(what, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\") {
		return fmt.Errorf("%s %q is not a valid Hub %s name", what, name, what)
	}
	return nil
}

// ParquetFiles lists the URLs of the Hub's parquet conversion of a
// dataset's config and split, in row order. The list is cached, so an
// offline run can find the files a connected one downloaded.
func (c *Client) ParquetFiles(ctx context.Context, repo, config, split string) ([]string, error) {
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	if err := checkName("config", config); err != nil {
		return nil, err
	}
	if err := checkName("split", split); err != nil {
		return nil, err
	}
	u := c.endpoint() + "/api/datasets/" + repo + "/parquet/" + url.PathEscape(config) + "/" + url.PathEscape(split)
	body, err := c.cachedJSON(u, func() ([]byte, error) {
		b, _, err := c.getJSON(ctx, u, func(status int) string {
			if status == http.StatusNotFound {
				return fmt.Sprintf("the Hub has no parquet files for dataset %s, config %s, split %s (check the names, or whether the Hub converted this dataset)", repo, config, split)
			}
			return ""
		})
		return b, err
	})
	if err != nil {
		return nil, err
	}
	var urls []string
	if err := json.Unmarshal(body, &urls); err != nil {
		return nil, fmt.Errorf("%s: the answer is not a JSON list of URLs: %w", u, err)
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("%s: the Hub lists no parquet files", u)
	}
	for _, f := range urls {
		if _, err := c.checkFileURL(f); err != nil {
			return nil, fmt.Errorf("%s lists %q: %w", u, f, err)
		}
	}
	return urls, nil
}

// TreeEntry is a file ("file") or folder ("directory") of a repository
// at a revision.
type TreeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

// Files lists a dataset repository's files at revision (a branch, tag or
// commit), recursively, following the API's pagination.
func (c *Client) Files(ctx context.Context, repo, revision string) ([]TreeEntry, error) {
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	if err := checkName("revision", revision); err != nil {
		return nil, err
	}
	first := c.endpoint() + "/api/datasets/" + repo + "/tree/" + url.PathEscape(revision)
	body, err := c.cachedJSON(first, func() ([]byte, error) {
		var all []TreeEntry
		next := first + "?recursive=true&expand=false"
		for page := 0; next != ""; page++ {
			if page == 10000 {
				return nil, fmt.Errorf("%s: more than 10000 pages", first)
			}
			body, link, err := c.getJSON(ctx, next, func(status int) string {
				if status == http.StatusNotFound {
					return fmt.Sprintf("the Hub has no dataset %s at revision %s", repo, revision)
				}
				return ""
			})
			if err != nil {
				return nil, err
			}
			var entries []TreeEntry
			if err := json.Unmarshal(body, &entries); err != nil {
				return nil, fmt.Errorf("%s: the answer is not a JSON list of tree entries: %w", next, err)
			}
			all = append(all, entries...)
			next = link
		}
		return json.Marshal(all)
	})
	if err != nil {
		return nil, err
	}
	var all []TreeEntry
	if err := json.Unmarshal(body, &all); err != nil {
		return nil, fmt.Errorf("%s: the cached listing is damaged: %w", first, err)
	}
	return all, nil
}

// ResolveURL is where a repository's file at revision is downloaded from.
func (c *Client) ResolveURL(repo, revision, file string) string {
	var parts []string
	for _, p := range strings.Split(file, "/") {
		parts = append(parts, url.PathEscape(p))
	}
	return c.endpoint() + "/datasets/" + repo + "/resolve/" + url.PathEscape(revision) + "/" + strings.Join(parts, "/")
}

func (c *Client) endpoint() string {
	if c.Endpoint == "" {
		return DefaultEndpoint
	}
	return strings.TrimRight(c.Endpoint, "/")
}

// httpClient makes the requests; a redirect to any other host (a
// subdomain included: the Hub's CDN is one) goes without the token.
func (c *Client) httpClient() *http.Client {
	hc := http.Client{}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	next := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
			req.Header.Del("Authorization")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("more than 10 redirects")
		}
		return nil
	}
	return &hc
}

// checkFileURL accepts a file URL on the Hub's own host, the only host a
// listing may point gym at with the token.
func (c *Client) checkFileURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(c.endpoint())
	if err != nil {
		return nil, fmt.Errorf("HF_ENDPOINT %q: %w", c.endpoint(), err)
	}
	if u.Scheme != base.Scheme || u.Host != base.Host {
		return nil, fmt.Errorf("not on the Hub endpoint %s", c.endpoint())
	}
	return u, nil
}

// cachePath is where a Hub URL's content is kept: under the endpoint's
// host, by the URL's path, every segment checked.
func (c *Client) cachePath(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	segs := []string{c.CacheDir, "hub", strings.ReplaceAll(u.Host, ":", "_")}
	for _, s := range strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/") {
		s, err := url.PathUnescape(s)
		if err != nil {
			return "", err
		}
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\") {
			return "", fmt.Errorf("%s: path segment %q cannot name a cache file", raw, s)
		}
		segs = append(segs, s)
	}
	return filepath.Join(segs...), nil
}

// cachedJSON is an API document fetched by fetch, kept under the URL's
// cache path for offline runs, which read only that copy.
func (c *Client) cachedJSON(u string, fetch func() ([]byte, error)) ([]byte, error) {
	p, err := c.cachePath(u)
	if err != nil {
		return nil, err
	}
	p += ".json"
	if c.Offline {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u, ErrNotCached)
		}
		return b, nil
	}
	b, err := fetch()
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(p, b); err != nil {
		return nil, err
	}
	return b, nil
}

// getJSON gets an API document and the next page's URL from its Link header.
func (c *Client) getJSON(ctx context.Context, u string, hint func(int) string) ([]byte, string, error) {
	var body []byte
	var next string
	err := c.retry(ctx, u, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		c.authorize(req)
		resp, err := c.httpClient().Do(req)
		if err != nil {
			return Transient{err}
		}
		defer resp.Body.Close()
		if err := c.statusError(u, resp, hint); err != nil {
			return err
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return Transient{err}
		}
		next = nextLink(resp.Header.Get("Link"))
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if next != "" {
		if _, err := c.checkFileURL(next); err != nil {
			return nil, "", fmt.Errorf("%s: next page %q: %w", u, next, err)
		}
	}
	return body, next, nil
}

var linkNext = regexp.MustCompile(`<([^>]+)>\s*;\s*rel="?next"?`)

func nextLink(h string) string {
	if m := linkNext.FindStringSubmatch(h); m != nil {
		return m[1]
	}
	return ""
}

func (c *Client) authorize(req *http.Request) { Authorize(req, c.endpoint(), c.Token) }

// Authorize sends token as req's bearer token when req goes to base's
// scheme and host, and to no other; "" sends none.
func Authorize(req *http.Request, base, token string) {
	if token == "" {
		return
	}
	if b, err := url.Parse(base); err == nil && req.URL.Scheme == b.Scheme && req.URL.Host == b.Host {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

func (c *Client) statusError(u string, resp *http.Response, hint func(int) string) error {
	if resp.StatusCode < 300 {
		return nil
	}
	e := StatusError{URL: u, Status: resp.StatusCode}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if c.Token == "" {
			e.Hint = "the dataset is gated or private: set HF_TOKEN (or hf_token in env.yaml) to a token of an account that has accepted its terms"
		} else {
			e.Hint = "the Hub refused the token: check that HF_TOKEN (or hf_token) is a valid, unexpired token"
		}
	case http.StatusForbidden:
		e.Hint = "the token's account has no access: accept the dataset's terms on its Hub page, or use a token with read access"
	case http.StatusTooManyRequests:
		e.Hint = "the Hub is rate-limiting these requests; wait, or set HF_TOKEN for a higher limit"
	}
	if hint != nil {
		if h := hint(resp.StatusCode); h != "" {
			e.Hint = h
		}
	}
	return RetryLater(resp, &e)
}

// retry runs try until it succeeds, fails for good, or the retries are spent.
func (c *Client) retry(ctx context.Context, u string, try func() error) error {
	return Retrier{Retries: c.Retries, Backoff: c.Backoff, Log: c.Log, Service: "hub"}.Do(ctx, u, try)
}

// Download returns the local path of a Hub file, downloading it unless
// the cache holds the version the Hub names by ETag. A cut-off download
// is resumed from its partial file, now or by a later run.
func (c *Client) Download(ctx context.Context, fileURL string) (string, error) {
	if _, err := c.checkFileURL(fileURL); err != nil {
		return "", fmt.Errorf("%s: %w", fileURL, err)
	}
	final, err := c.cachePath(fileURL)
	if err != nil {
		return "", err
	}
	if c.Offline {
		if _, err := os.Stat(final); err != nil {
			return "", fmt.Errorf("%s: %w", fileURL, ErrNotCached)
		}
		return final, nil
	}
	var m meta
	if err := c.retry(ctx, fileURL, func() (err error) { m, err = c.head(ctx, fileURL); return err }); err != nil {
		return "", err
	}
	// Another gym downloading the same file into this cache finishes
	// first; the cached copy is then checked again.
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	lock, err := flock.Lock(ctx, final+".lock", func() {
		if c.Log != nil {
			fmt.Fprintf(c.Log, "Waiting for another download of %s\n", fileURL)
		}
	})
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if m.etag != "" && jsonl.ReadString(final+".etag") == m.etag {
		if st, err := os.Stat(final); err == nil && (m.size < 0 || st.Size() == m.size) {
			return final, nil
		}
	}
	if c.Log != nil {
		fmt.Fprintf(c.Log, "Downloading %s\n", fileURL)
	}
	part := final + ".part"
	if m.etag == "" || jsonl.ReadString(part+".etag") != m.etag {
		os.Remove(part)
	}
	if err := os.WriteFile(part+".etag", []byte(m.etag), 0o644); err != nil {
		return "", err
	}
	if err := c.retry(ctx, fileURL, func() error { return c.fetchInto(ctx, fileURL, m, part) }); err != nil {
		return "", err
	}
	if m.size >= 0 {
		if st, err := os.Stat(part); err != nil || st.Size() != m.size {
			return "", fmt.Errorf("%s: downloaded %d bytes, the Hub announced %d", fileURL, jsonl.FileSize(part), m.size)
		}
	}
	if m.sha256 != "" {
		if got, err := fileSHA256(part); err != nil || got != m.sha256 {
			os.Remove(part)
			return "", fmt.Errorf("%s: the downloaded bytes do not have the sha256 the Hub announced (%s); the partial copy is removed, run again", fileURL, m.sha256)
		}
	}
	if err := os.Rename(part, final); err != nil {
		return "", err
	}
	if err := os.Rename(part+".etag", final+".etag"); err != nil {
		return "", err
	}
	return final, nil
}

// meta is what a HEAD tells of a file: its version, size and where the
// bytes are.
type meta struct {
	etag   string
	size   int64 // -1 when not announced
	source *url.URL
	// sha256 is the content's checksum when the Hub names one: an LFS
	// file's X-Linked-Etag is the sha256 of its bytes.
	sha256 string
}

// head asks for a file's metadata, following redirects on the Hub's own
// host (with the token) and stopping at one to another host: that
// redirect is where the bytes are, fetched without the token.
func (c *Client) head(ctx context.Context, fileURL string) (meta, error) {
	u, _ := url.Parse(fileURL)
	noFollow := *c.httpClient()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for hop := 0; hop < 10; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
		if err != nil {
			return meta{}, err
		}
		req.Header.Set("Accept-Encoding", "identity")
		c.authorize(req)
		resp, err := noFollow.Do(req)
		if err != nil {
			return meta{}, Transient{err}
		}
		resp.Body.Close()
		m := meta{etag: firstHeader(resp.Header, "X-Linked-Etag", "ETag"), size: -1, source: u}
		if lfs := firstHeader(resp.Header, "X-Linked-Etag"); sha256Hex.MatchString(lfs) {
			m.sha256 = lfs
		}
		if s, err := strconv.ParseInt(firstHeader(resp.Header, "X-Linked-Size", "Content-Length"), 10, 64); err == nil {
			m.size = s
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			loc, err := u.Parse(resp.Header.Get("Location"))
			if err != nil || resp.Header.Get("Location") == "" {
				return meta{}, fmt.Errorf("%s: redirect without a usable Location", u)
			}
			if loc.Host == u.Host && loc.Scheme == u.Scheme {
				u = loc
				continue
			}
			m.source = loc
			return m, nil
		}
		if err := c.statusError(fileURL, resp, nil); err != nil {
			return meta{}, err
		}
		return m, nil
	}
	return meta{}, fmt.Errorf("%s: more than 10 redirects", fileURL)
}

func firstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return strings.Trim(strings.TrimPrefix(v, "W/"), `"`)
		}
	}
	return ""
}

// fetchInto appends the file's remaining bytes to part, asking for a
// range when part already holds some. Errors name fileURL: a redirect's
// URL is signed, and a signature is as secret as a token.
func (c *Client) fetchInto(ctx context.Context, fileURL string, m meta, part string) error {
	have := jsonl.FileSize(part)
	if m.size >= 0 && have == m.size {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.source.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept-Encoding", "identity")
	c.authorize(req)
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Transient{err}
	}
	defer resp.Body.Close()
	resumed, err := Resumed(resp, part, have)
	if err != nil {
		return err
	}
	if !resumed {
		if err := c.statusError(fileURL, resp, nil); err != nil {
			return err
		}
	}
	// Named by the Hub's URL: the storage's path is a content hash.
	meter := c.meter("Downloading "+path.Base(fileURL), m.size)
	if resumed {
		meter.Add(have)
	}
	if err := WritePart(part, resumed, resp.Body, meter); err != nil {
		return err
	}
	if m.size >= 0 && jsonl.FileSize(part) < m.size {
		return Transient{fmt.Errorf("the download stopped at %d of %d bytes", jsonl.FileSize(part), m.size)}
	}
	return nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeFileAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return jsonl.WriteFileAtomic(p, func(w *bufio.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// FromEnv is the client huggingface_hub would be: HF_ENDPOINT,
// HF_HUB_OFFLINE, and the token of configToken (NeMo Gym's hf_token),
// else HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the file `hf auth
// login` writes (HF_TOKEN_PATH, else $HF_HOME/token, else
// ~/.cache/huggingface/token). Downloads are kept under cacheDir.
func FromEnv(getenv func(string) string, home, cacheDir, configToken string) *Client {
	c := &Client{Endpoint: getenv("HF_ENDPOINT"), CacheDir: cacheDir}
	switch strings.ToUpper(getenv("HF_HUB_OFFLINE")) {
	case "1", "ON", "YES", "TRUE":
		c.Offline = true
	}
	c.Token = configToken
	for _, name := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if c.Token == "" {
			c.Token = getenv(name)
		}
	}
	if c.Token == "" {
		file := getenv("HF_TOKEN_PATH")
		if file == "" && getenv("HF_HOME") != "" {
			file = filepath.Join(getenv("HF_HOME"), "token")
		}
		if file == "" && home != "" {
			file = filepath.Join(home, ".cache", "huggingface", "token")
		}
		if file != "" {
			c.Token = strings.TrimSpace(jsonl.ReadString(file))
		}
	}
	return c
}
