package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sync"
	"testing"
)

// NewPostRequest builds what http.NewRequestWithContext builds, from a
// parsed URL it has seen (the second call) as from one it has not.
func TestNewPostRequestIsNewRequestWithContext(t *testing.T) {
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	for _, tc := range []struct {
		name, url string
		body      []byte
		kept      bool // parsed once, then from the cache
	}{
		{"plain", "http://127.0.0.1:8000/v1/responses", []byte(`{"a":1}`), true},
		{"empty body", "http://127.0.0.1:8000/seed_session", nil, true},
		{"empty port", "http://example.com:/verify", []byte(`{}`), true},
		{"query and escapes", "https://api.example.com/v1/responses?api-version=2024%2F10&x=%20y", []byte(`{}`), true},
		{"user info", "http://user:p%40ss@[::1]:9000/run", []byte(`{}`), true},
		{"rollout path", "http://localhost:1/ng-rollout/7-3/v1/responses", []byte(`[]`), false},
		{"escaped rollout path", "http://localhost:1/ng-rollout/a%2Fb/seed_session", []byte(`{}`), false},
		{"bad escape", "http://h/%zz", []byte(`{}`), false},
		{"control byte", "http://h/\x7f", []byte(`{}`), false},
		{"no scheme", "127.0.0.1:80/x", []byte(`{}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for call := range 2 {
				want, wantErr := http.NewRequestWithContext(ctx, http.MethodPost, tc.url, bytes.NewReader(tc.body))
				got, err := NewPostRequest(ctx, tc.url, tc.body)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("call %d: error %v, want %v", call, err, wantErr)
				}
				if err != nil {
					continue
				}
				sameRequest(t, got, want)
				if got.Context() != ctx {
					t.Errorf("call %d: the request does not carry the caller's context", call)
				}
				cached := parsedURLs.get(tc.url)
				if (cached != nil) != tc.kept || call == 1 && tc.kept && got.URL != cached {
					t.Errorf("call %d: cached %v, the request's URL the cached one %v; want kept %v", call, cached != nil, got.URL == cached, tc.kept)
				}
			}
		})
	}
}

func sameRequest(t *testing.T, got, want *http.Request) {
	t.Helper()
	if !reflect.DeepEqual(got.URL, want.URL) || got.URL.String() != want.URL.String() {
		t.Errorf("URL %#v, want %#v", got.URL, want.URL)
	}
	if got.Method != want.Method || got.Host != want.Host || got.Proto != want.Proto ||
		got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor || got.ContentLength != want.ContentLength {
		t.Errorf("request %s %s %s %s, length %d; want %s %s %s %s, length %d",
			got.Method, got.Host, got.Proto, got.URL, got.ContentLength, want.Method, want.Host, want.Proto, want.URL, want.ContentLength)
	}
	if !reflect.DeepEqual(got.Header, want.Header) {
		t.Errorf("header %v, want %v", got.Header, want.Header)
	}
	if (got.Body == http.NoBody) != (want.Body == http.NoBody) || (got.GetBody == nil) != (want.GetBody == nil) {
		t.Fatalf("body %T (GetBody %v), want %T (GetBody %v)", got.Body, got.GetBody != nil, want.Body, want.GetBody != nil)
	}
	gotBody, _ := io.ReadAll(got.Body)
	wantBody, _ := io.ReadAll(want.Body)
	replay, err := got.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	replayed, _ := io.ReadAll(replay)
	if !bytes.Equal(gotBody, wantBody) || !bytes.Equal(replayed, wantBody) {
		t.Errorf("body %q, replayed %q; want %q", gotBody, replayed, wantBody)
	}
}

// The request that parsed a URL keeps a URL of its own: changing it does
// not reach the requests built from the cache.
func TestNewPostRequestParsedURLIsACopy(t *testing.T) {
	const raw = "http://127.0.0.1:8000/parsed-url-copy"
	first, err := NewPostRequest(context.Background(), raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.URL.Path = "/changed"
	second, err := NewPostRequest(context.Background(), raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.URL.Path != "/parsed-url-copy" {
		t.Errorf("the cached URL's path is %q", second.URL.Path)
	}
}

// Requests to one URL at once share its parsed URL: under the race
// detector, anything on the way (client, transport, server) that wrote to
// it would show.
func TestPostJSONSharesTheParsedURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := NewClient(ClientOptions{})
	target := srv.URL + "/shared-url"
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if _, _, err := c.PostJSON(context.Background(), target, []byte(`{}`), nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if parsedURLs.get(target) == nil {
		t.Error("the URL was not kept parsed")
	}
}

// Past the bound, URLs are parsed each time and the cache stops growing.
func TestURLCacheIsBounded(t *testing.T) {
	var c urlCache
	for i := range maxParsedURLs + 50 {
		raw := fmt.Sprintf("http://127.0.0.1:8000/ng-rollout/%d-0/v1/responses", i)
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		c.put(raw, u)
		c.put(raw, u)
	}
	n := 0
	c.urls.Range(func(any, any) bool { n++; return true })
	if n != maxParsedURLs || c.size.Load() != maxParsedURLs {
		t.Errorf("%d URLs kept (size %d), want %d", n, c.size.Load(), maxParsedURLs)
	}
	if c.get("http://127.0.0.1:8000/ng-rollout/0-0/v1/responses") == nil || c.get(fmt.Sprintf("http://127.0.0.1:8000/ng-rollout/%d-0/v1/responses", maxParsedURLs)) != nil {
		t.Error("the first URLs are not the ones kept")
	}
}

func BenchmarkPostRequest(b *testing.B) {
	const raw = "http://127.0.0.1:8000/v1/responses"
	body := []byte(`{"input":"hello"}`)
	b.Run("NewRequestWithContext", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := http.NewRequestWithContext(context.Background(), http.MethodPost, raw, bytes.NewReader(body)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("url.Parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := url.Parse(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("NewPostRequest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewPostRequest(context.Background(), raw, body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
