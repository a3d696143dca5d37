package server

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// NewPostRequest is http.NewRequestWithContext(ctx, "POST", rawURL,
// bytes.NewReader(body)), with rawURL parsed once per distinct string:
// parsing took about a microsecond of each call an agent makes (about
// five a rollout). Requests to the same URL share its parsed *url.URL, which is
// why no caller may modify a request's URL (nor may a RoundTripper).
func NewPostRequest(ctx context.Context, rawURL string, body []byte) (*http.Request, error) {
	if u := parsedURLs.get(rawURL); u != nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.URL, req.Host = u, u.Host
		return req, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	// A URL naming a rollout (/ng-rollout/<id>/...) is called by that
	// rollout alone: kept, they would fill the cache in a few dozen
	// rollouts and leave no room for the fixed URLs.
	if err == nil && !strings.Contains(req.URL.Path, rolloutPrefix) {
		parsedURLs.put(rawURL, req.URL)
	}
	return req, err
}

// maxParsedURLs bounds the URLs kept parsed: a process calls a few fixed
// URLs (its servers' endpoints) very often, and one that calls many
// different URLs must not grow the cache without end.
const maxParsedURLs = 256

// urlCache holds parsed URLs, about maxParsedURLs at most (callers racing
// past the bound may each add one); later ones are parsed every time.
type urlCache struct {
	urls sync.Map // string → *url.URL, never modified once stored
	size atomic.Int32
}

var parsedURLs urlCache

func (c *urlCache) get(raw string) *url.URL {
	if u, ok := c.urls.Load(raw); ok {
		return u.(*url.URL)
	}
	return nil
}

func (c *urlCache) put(raw string, u *url.URL) {
	if c.size.Load() >= maxParsedURLs {
		return
	}
	// A copy: the request that parsed it keeps a URL of its own.
	shared := *u
	if _, loaded := c.urls.LoadOrStore(raw, &shared); !loaded {
		c.size.Add(1)
	}
}
