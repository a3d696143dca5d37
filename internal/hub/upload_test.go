package hub_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

func TestCommitInlineAndLFS(t *testing.T) {
	for _, tc := range []struct {
		name     string
		partSize int
	}{{"whole", 0}, {"multipart", 7}} {
		t.Run(tc.name, func(t *testing.T) {
			s := hubtest.New()
			defer s.Close()
			s.Token = "hf_write"
			s.LFSThreshold = 20
			s.PartSize = tc.partSize
			c := client(s, t)
			c.Token = "hf_write"
			ctx := context.Background()
			created, err := c.CreateDatasetRepo(ctx, "org/ds", true)
			if err != nil || !created {
				t.Fatalf("CreateDatasetRepo = %v, %v", created, err)
			}
			if created, err := c.CreateDatasetRepo(ctx, "org/ds", true); err != nil || created {
				t.Fatalf("a second CreateDatasetRepo = %v, %v; want an existing repo and no error", created, err)
			}
			sha, err := c.RepoSHA(ctx, "org/ds", "")
			if err != nil {
				t.Fatal(err)
			}
			big := bytes.Repeat([]byte(`{"responses_create_params":{}}`+"\n"), 3)
			local := filepath.Join(t.TempDir(), "train.jsonl")
			os.WriteFile(local, big, 0o644)
			res, err := c.Commit(ctx, hub.CommitRequest{Repo: "org/ds", ParentCommit: sha, Summary: "Upload train.jsonl",
				Files: []hub.CommitFile{{PathInRepo: "train.jsonl", Local: local}, {PathInRepo: "README.md", Content: []byte("---\n---\n")}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.CommitOID == "" || res.PullRequestURL != "" {
				t.Errorf("commit result %+v", res)
			}
			if b, _ := s.File("org/ds", "main", "train.jsonl"); !bytes.Equal(b, big) || !s.IsLFS("org/ds", "main", "train.jsonl") {
				t.Errorf("train.jsonl on the Hub = %q (LFS %v); want the file, in LFS", b, s.IsLFS("org/ds", "main", "train.jsonl"))
			}
			if b, _ := s.File("org/ds", "main", "README.md"); string(b) != "---\n---\n" || s.IsLFS("org/ds", "main", "README.md") {
				t.Errorf("README.md = %q; want inline", b)
			}
			if s.StorageAuth != 0 {
				t.Errorf("the token went to the storage host %d times", s.StorageAuth)
			}
			// The download of an LFS file is checked against its sha256.
			p, err := c.Download(ctx, c.ResolveURL("org/ds", "main", "train.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, big) {
				t.Errorf("downloaded %q", b)
			}
			// The branch moved: a commit on the old parent is refused.
			_, err = c.Commit(ctx, hub.CommitRequest{Repo: "org/ds", ParentCommit: sha, Summary: "again",
				Files: []hub.CommitFile{{PathInRepo: "x.txt", Content: []byte("x")}}})
			var se *hub.StatusError
			if !errors.As(err, &se) || se.Status != http.StatusPreconditionFailed || !strings.Contains(err.Error(), "run again") {
				t.Errorf("commit on a stale parent: %v", err)
			}
		})
	}
}

func TestCommitPullRequest(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.AddFile("org/ds", "main", "README.md", []byte("# card\n"))
	c := client(s, t)
	res, err := c.Commit(context.Background(), hub.CommitRequest{Repo: "org/ds", Summary: "Upload a.jsonl", CreatePR: true,
		Files: []hub.CommitFile{{PathInRepo: "a.jsonl", Content: []byte("{}\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.PullRequestURL, "/datasets/org/ds/discussions/1") {
		t.Errorf("pull request URL %q", res.PullRequestURL)
	}
	if _, ok := s.File("org/ds", "main", "a.jsonl"); ok {
		t.Error("a pull request wrote to main")
	}
	if b, ok := s.File("org/ds", "refs/pr/1", "a.jsonl"); !ok || string(b) != "{}\n" {
		t.Errorf("refs/pr/1 has a.jsonl = %q, %v", b, ok)
	}
}

func TestCollections(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.AddCollection("org/nemo-gym-abc123")
	c := client(s, t)
	ctx := context.Background()
	if err := c.AddCollectionItem(ctx, "org/nemo-gym-abc123", "org/ds"); err != nil {
		t.Fatal(err)
	}
	items, err := c.CollectionItems(ctx, "org/nemo-gym-abc123")
	if err != nil || len(items) != 1 || items[0] != (hub.CollectionItem{ID: "org/ds", Type: "dataset"}) {
		t.Fatalf("CollectionItems = %v, %v", items, err)
	}
	_, err = c.CollectionItems(ctx, "org/missing-1")
	if err == nil || !strings.Contains(err.Error(), "hf_collection_slug") {
		t.Errorf("a missing collection: %v", err)
	}
	if _, err := c.CollectionItems(ctx, "../x"); err == nil {
		t.Error("a slug with .. was accepted")
	}
}

func TestWriteRefusals(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.Token = "hf_write"
	s.ReadToken = "hf_read"
	s.AddFile("org/ds", "main", "README.md", []byte("x"))
	ctx := context.Background()
	for _, tc := range []struct {
		token string
		want  int
		hint  string
	}{
		{"", http.StatusUnauthorized, "uploading needs a token"},
		{"hf_wrong", http.StatusUnauthorized, "refused the token"},
		{"hf_read", http.StatusForbidden, "--create-pr"},
	} {
		c := client(s, t)
		c.Token = tc.token
		_, err := c.Commit(ctx, hub.CommitRequest{Repo: "org/ds", Summary: "s", Files: []hub.CommitFile{{PathInRepo: "a", Content: []byte("a")}}})
		var se *hub.StatusError
		if !errors.As(err, &se) || se.Status != tc.want || !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("token %q: %v; want %d with %q", tc.token, err, tc.want, tc.hint)
		}
		if tc.token != "" && strings.Contains(err.Error(), tc.token) {
			t.Errorf("the error shows the token: %v", err)
		}
	}
	reader := client(s, t)
	reader.Token = "hf_read"
	if created, err := reader.CreateDatasetRepo(ctx, "org/ds", true); err != nil || created {
		t.Errorf("a read token's create of a repo it can see: %v, %v; want it taken as existing", created, err)
	}
	if _, err := reader.CreateDatasetRepo(ctx, "org/new", true); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a read token's create of a new repo: %v", err)
	}
	c := client(s, t)
	c.Token = "hf_write"
	c.Retries = 2
	s.Refuse(3, http.StatusTooManyRequests)
	_, err := c.CreateDatasetRepo(ctx, "org/other", true)
	var se *hub.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests || !strings.Contains(err.Error(), "rate-limiting") {
		t.Errorf("after the retries: %v", err)
	}
	s.Refuse(1, http.StatusTooManyRequests)
	if _, err := c.CreateDatasetRepo(ctx, "org/other", true); err != nil {
		t.Errorf("one 429 is retried: %v", err)
	}
}

func TestDownloadRejectsBadChecksum(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.LFSThreshold = 1
	c := client(s, t)
	ctx := context.Background()
	if _, err := c.CreateDatasetRepo(ctx, "org/ds", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Commit(ctx, hub.CommitRequest{Repo: "org/ds", Summary: "s", Files: []hub.CommitFile{{PathInRepo: "d.jsonl", Content: []byte("{\"a\":1}\n")}}}); err != nil {
		t.Fatal(err)
	}
	s.Corrupt("d.jsonl")
	_, err := c.Download(ctx, c.ResolveURL("org/ds", "main", "d.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("a download whose bytes do not match: %v", err)
	}
}
