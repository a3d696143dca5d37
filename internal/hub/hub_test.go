package hub_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

func client(s *hubtest.Server, t *testing.T) *hub.Client {
	return &hub.Client{Endpoint: s.Hub.URL, CacheDir: t.TempDir(), Backoff: time.Millisecond}
}

func TestParquetDownloadCachedByETag(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.AddParquet("org/bench", "default", "train", []byte("shard zero"), []byte("shard one"))
	c := client(s, t)
	ctx := context.Background()
	urls, err := c.ParquetFiles(ctx, "org/bench", "default", "train")
	if err != nil || len(urls) != 2 {
		t.Fatalf("ParquetFiles = %v, %v", urls, err)
	}
	for i, want := range []string{"shard zero", "shard one"} {
		p, err := c.Download(ctx, urls[i])
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("shard %d = %q; want %q", i, b, want)
		}
	}
	if _, err := c.Download(ctx, urls[0]); err != nil {
		t.Fatal(err)
	}
	if n := s.Downloads["default/train/0000.parquet"]; n != 1 {
		t.Errorf("shard 0 downloaded %d times; the cached copy has the Hub's ETag, so once", n)
	}
	s.AddParquet("org/bench", "default", "train", []byte("shard zero, revised"), []byte("shard one"))
	p, err := c.Download(ctx, urls[0])
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "shard zero, revised" {
		t.Errorf("after the Hub changed the shard, the cache gave %q", b)
	}

	off := &hub.Client{Endpoint: s.Hub.URL, CacheDir: c.CacheDir, Offline: true}
	urls2, err := off.ParquetFiles(ctx, "org/bench", "default", "train")
	if err != nil || len(urls2) != 2 {
		t.Fatalf("offline ParquetFiles = %v, %v", urls2, err)
	}
	if _, err := off.Download(ctx, urls2[1]); err != nil {
		t.Errorf("offline Download of a cached shard: %v", err)
	}
	if _, err := off.ParquetFiles(ctx, "org/bench", "default", "test"); !errors.Is(err, hub.ErrNotCached) {
		t.Errorf("offline listing of an uncached split: %v; want ErrNotCached", err)
	}
}

func TestDownloadResumesACutTransfer(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	content := []byte(strings.Repeat("0123456789", 1000))
	s.AddParquet("org/bench", "default", "test", content)
	s.CutNext("default/test/0000.parquet", 4321)
	c := client(s, t)
	ctx := context.Background()
	urls, err := c.ParquetFiles(ctx, "org/bench", "default", "test")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Download(ctx, urls[0])
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(content) {
		t.Fatalf("resumed download has %d bytes; want the %d served", len(b), len(content))
	}
	if s.Downloads["default/test/0000.parquet"] != 2 || s.Ranges["default/test/0000.parquet"] != 1 {
		t.Errorf("downloads %v, ranged %v; want the cut one and one ranged resume", s.Downloads, s.Ranges)
	}
	if _, err := os.Stat(p + ".part"); !os.IsNotExist(err) {
		t.Errorf("the partial file is left behind: %v", err)
	}
}

// TestDownloadResumesAcrossRuns: a run cancelled mid-transfer leaves its
// partial file, and the next run asks only for the rest.
func TestDownloadResumesAcrossRuns(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	content := []byte(strings.Repeat("abcdefghij", 500))
	s.AddParquet("org/bench", "default", "test", content)
	s.CutNext("default/test/0000.parquet", 1000)
	c := client(s, t)
	c.Retries = -1
	ctx := context.Background()
	urls, _ := c.ParquetFiles(ctx, "org/bench", "default", "test")
	if _, err := c.Download(ctx, urls[0]); err == nil {
		t.Fatal("a cut transfer with no retries left succeeded")
	}
	c.Retries = 0
	p, err := c.Download(ctx, urls[0])
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(content) {
		t.Fatalf("got %d bytes; want %d", len(b), len(content))
	}
	if s.Ranges["default/test/0000.parquet"] != 1 {
		t.Errorf("the second run did not resume with a range: ranges %v, downloads %v", s.Ranges, s.Downloads)
	}
}

func TestTokenOnlyToTheHub(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.Token = "hf_secret"
	s.AddParquet("org/gated", "main", "train", []byte("gated rows"))
	ctx := context.Background()

	anon := client(s, t)
	_, err := anon.ParquetFiles(ctx, "org/gated", "main", "train")
	var se *hub.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || !strings.Contains(err.Error(), "set HF_TOKEN") {
		t.Fatalf("without a token: %v; want a 401 that says to set HF_TOKEN", err)
	}
	wrong := client(s, t)
	wrong.Token = "hf_wrong"
	if _, err := wrong.ParquetFiles(ctx, "org/gated", "main", "train"); err == nil || strings.Contains(err.Error(), "hf_wrong") || !strings.Contains(err.Error(), "refused the token") {
		t.Fatalf("with a wrong token: %v; want a refusal that does not print the token", err)
	}

	c := client(s, t)
	c.Token = "hf_secret"
	urls, err := c.ParquetFiles(ctx, "org/gated", "main", "train")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Download(ctx, urls[0]); err != nil {
		t.Fatal(err)
	}
	if s.StorageAuth != 0 {
		t.Errorf("the token reached the storage host %d times", s.StorageAuth)
	}
}

func TestRateLimitAndServerErrorsRetried(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.AddParquet("org/bench", "default", "train", []byte("rows"))
	s.Refuse(2, http.StatusTooManyRequests)
	s.Refuse(1, http.StatusServiceUnavailable)
	c := client(s, t)
	if _, err := c.ParquetFiles(context.Background(), "org/bench", "default", "train"); err != nil {
		t.Fatalf("two 429s and a 503, then success: %v", err)
	}
	s.Refuse(10, http.StatusTooManyRequests)
	c.Retries = 2
	_, err := c.ParquetFiles(context.Background(), "org/bench", "default", "train")
	var se *hub.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests || !strings.Contains(err.Error(), "rate-limiting") {
		t.Fatalf("persistent 429: %v", err)
	}
}

func TestErrorsSayWhat(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.AddFile("org/bench", "abc123", "data/train-00000-of-00001.parquet", []byte("x"))
	c := client(s, t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"terms not accepted", func() error {
			s.Refuse(1, http.StatusForbidden)
			_, err := c.Files(ctx, "org/bench", "abc123")
			return err
		}, "HTTP 403 Forbidden; the token's account has no access: accept the dataset's terms"},
		{"unknown split", func() error { _, err := c.ParquetFiles(ctx, "org/bench", "default", "nope"); return err }, "no parquet files for dataset org/bench, config default, split nope"},
		{"bad repo", func() error { _, err := c.ParquetFiles(ctx, "../etc", "default", "train"); return err }, `".." is not a valid Hub name`},
		{"three parts", func() error { _, err := c.ParquetFiles(ctx, "a/b/c", "default", "train"); return err }, "owner/name"},
		{"bad split", func() error { _, err := c.ParquetFiles(ctx, "org/bench", "default", "../x"); return err }, "split"},
		{"unknown revision", func() error { _, err := c.Files(ctx, "org/bench", "fff"); return err }, "no dataset org/bench at revision fff"},
		{"foreign URL", func() error { _, err := c.Download(ctx, "http://elsewhere.example/x.parquet"); return err }, "not on the Hub endpoint"},
		{"missing file", func() error {
			_, err := c.Download(ctx, c.ResolveURL("org/bench", "abc123", "data/none.parquet"))
			return err
		}, "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v; want it to say %q", err, tc.want)
			}
		})
	}
}

func TestRevisionFiles(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.AddFile("org/bench", "abc123", "data/train-00000-of-00001.parquet", []byte("pinned rows"))
	s.AddFile("org/bench", "abc123", "README.md", []byte("# bench"))
	c := client(s, t)
	ctx := context.Background()
	files, err := c.Files(ctx, "org/bench", "abc123")
	if err != nil || len(files) != 3 || files[1].Type != "directory" {
		t.Fatalf("Files = %v, %v; want README.md, the folder data and its file", files, err)
	}
	p, err := c.Download(ctx, c.ResolveURL("org/bench", "abc123", "data/train-00000-of-00001.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "pinned rows" {
		t.Errorf("got %q", b)
	}
	off := &hub.Client{Endpoint: s.Hub.URL, CacheDir: c.CacheDir, Offline: true}
	if files, err := off.Files(ctx, "org/bench", "abc123"); err != nil || len(files) != 3 {
		t.Errorf("offline Files of a listed revision = %v, %v", files, err)
	}
	if _, err := off.Files(ctx, "org/bench", "def456"); !errors.Is(err, hub.ErrNotCached) {
		t.Errorf("offline Files of an unlisted revision: %v; want ErrNotCached", err)
	}
}

// TestRedirectDropsToken: a download the Hub itself answers but then
// redirects elsewhere (its CDN is a subdomain, which Go's client would
// trust) reaches the other host without the token.
func TestRedirectDropsToken(t *testing.T) {
	var sawAuth atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sawAuth.Add(1)
		}
		w.Write([]byte("rows"))
	}))
	defer other.Close()
	hubSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.Header().Set("ETag", `"e1"`)
			w.Header().Set("Content-Length", "4")
			return
		}
		http.Redirect(w, r, other.URL+"/blob", http.StatusFound)
	}))
	defer hubSrv.Close()
	c := &hub.Client{Endpoint: hubSrv.URL, Token: "hf_secret", CacheDir: t.TempDir(), HTTP: &http.Client{}}
	if _, err := c.Download(context.Background(), hubSrv.URL+"/datasets/o/n/resolve/main/x.parquet"); err != nil {
		t.Fatal(err)
	}
	if sawAuth.Load() != 0 {
		t.Error("the token followed the redirect to another host")
	}
}

func TestFromEnv(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(home+"/.cache/huggingface", 0o755)
	os.WriteFile(home+"/.cache/huggingface/token", []byte("hf_from_file\n"), 0o600)
	hfHome := t.TempDir()
	os.WriteFile(hfHome+"/token", []byte("hf_from_hf_home"), 0o600)
	for _, tc := range []struct {
		name        string
		env         map[string]string
		configToken string
		token       string
		offline     bool
	}{
		{"config hf_token wins", map[string]string{"HF_TOKEN": "hf_env"}, "hf_config", "hf_config", false},
		{"HF_TOKEN", map[string]string{"HF_TOKEN": "hf_env", "HUGGING_FACE_HUB_TOKEN": "hf_old"}, "", "hf_env", false},
		{"the old name", map[string]string{"HUGGING_FACE_HUB_TOKEN": "hf_old"}, "", "hf_old", false},
		{"HF_HOME's token file", map[string]string{"HF_HOME": hfHome}, "", "hf_from_hf_home", false},
		{"the login file", map[string]string{}, "", "hf_from_file", false},
		{"offline", map[string]string{"HF_HUB_OFFLINE": "1", "HF_TOKEN_PATH": "/nonexistent"}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hub.FromEnv(func(k string) string { return tc.env[k] }, home, "/cache", tc.configToken)
			if c.Token != tc.token || c.Offline != tc.offline || c.CacheDir != "/cache" {
				t.Errorf("token %q offline %v; want %q %v", c.Token, c.Offline, tc.token, tc.offline)
			}
		})
	}
}

// TestConcurrentDownloadsOnce: two downloads of one file into one cache
// (two gym processes) fetch it once, and both get it whole.
func TestConcurrentDownloadsOnce(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	content := strings.Repeat("0123456789", 100000)
	s.AddParquet("org/bench", "default", "train", []byte(content))
	cache := t.TempDir()
	ctx := context.Background()
	urls, err := (&hub.Client{Endpoint: s.Hub.URL, CacheDir: cache}).ParquetFiles(ctx, "org/bench", "default", "train")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			p, err := (&hub.Client{Endpoint: s.Hub.URL, CacheDir: cache}).Download(ctx, urls[0])
			if err == nil {
				if b, _ := os.ReadFile(p); string(b) != content {
					err = errors.New("a download got a damaged file")
				}
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := s.Downloads["default/train/0000.parquet"]; n != 1 {
		t.Errorf("downloaded %d times; want once", n)
	}
}
