package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

func TestErrorMapping(t *testing.T) {
	logs := &syncBuffer{}
	srv := httptest.NewServer(Wrap(testRuntime(logs), echoHandler(nil)))
	defer srv.Close()
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		wantBody   string
		wantCookie bool
		wantLog    string
	}{
		{
			name: "upstream error", method: "GET", path: "/fail/upstream",
			wantStatus: 401,
			wantBody:   `"Hit an exception in EchoServer___echo_server calling an inner server: {\"error\":{\"message\":\"bad key <x>\"}}"`,
			wantLog:    "returned HTTP 401",
		},
		{
			name: "plain error", method: "GET", path: "/fail/plain",
			wantStatus: 500, wantBody: `"tool \"x\" failed: <boom>"`, wantLog: "request failed",
		},
		{
			name: "panic", method: "GET", path: "/fail/panic",
			wantStatus: 500, wantBody: `"An unknown error occurred"`, wantLog: "stack=",
		},
		{
			name: "bad JSON", method: "POST", path: "/echo", body: `{"a":}`,
			wantStatus: 422, wantCookie: true,
			wantBody: `{"detail":[{"type":"json_invalid","loc":["body",5],"msg":"JSON decode error","input":{},"ctx":{"error":"invalid character '}' looking for beginning of value"}}]}`,
		},
		{
			name: "empty body", method: "POST", path: "/echo",
			wantStatus: 422, wantCookie: true,
			wantBody: `{"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]}`,
		},
		{
			name: "wrong type", method: "POST", path: "/typed", body: `{"params":{"temperature":"hot"}}`,
			wantStatus: 422, wantCookie: true,
			wantBody: `{"detail":[{"type":"float_type","loc":["body","params","temperature"],"msg":"Input should be a valid number","input":null}]}`,
		},
		{
			name: "good JSON", method: "POST", path: "/echo", body: `{"b": [1, 2]}`,
			wantStatus: 200, wantCookie: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d (body %s)", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantBody != "" && string(body) != tt.wantBody {
				t.Errorf("body\n got %s\nwant %s", body, tt.wantBody)
			}
			if !json.Valid(body) {
				t.Errorf("body is not JSON: %s", body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if got := len(resp.Cookies()) == 1; got != tt.wantCookie {
				t.Errorf("Set-Cookie %v, want present=%v", resp.Header.Values("Set-Cookie"), tt.wantCookie)
			}
			if resp.Header.Get("X-Prepared") != "" {
				t.Error("an error response kept the failed handler's headers")
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, logs.String())
			}
		})
	}
}

// A deterministic client error of an inner server keeps its status class
// hop by hop, so the caller does not retry what cannot succeed; what may
// succeed later stays NeMo Gym's 500.
func TestUpstreamStatusClassKept(t *testing.T) {
	srv := httptest.NewServer(Wrap(testRuntime(io.Discard), echoHandler(nil)))
	defer srv.Close()
	for _, tt := range []struct{ upstream, want int }{
		{400, 400}, {401, 401}, {403, 403}, {404, 404}, {409, 409}, {413, 413}, {422, 422},
		{408, 500}, {429, 500},
		{500, 500}, {502, 500}, {503, 500}, {504, 500}, {520, 500},
		{302, 500},
	} {
		t.Run(strconv.Itoa(tt.upstream), func(t *testing.T) {
			resp, err := srv.Client().Get(srv.URL + "/fail/upstream/" + strconv.Itoa(tt.upstream))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
			want := `"Hit an exception in EchoServer___echo_server calling an inner server: {\"error\":\"upstream said no\"}"`
			if string(body) != want {
				t.Errorf("body\n got %s\nwant %s", body, want)
			}
		})
	}
}

func TestErrorAfterResponseStartedAborts(t *testing.T) {
	srv := httptest.NewServer(Wrap(testRuntime(io.Discard), echoHandler(nil)))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/fail/late")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || err == nil {
		t.Errorf("status %d, body %q, read error %v: want a 200 stream cut off with an error", resp.StatusCode, body, err)
	}
	if string(body) != "event: response.created\n\n" {
		t.Errorf("body %q", body)
	}
}

func TestHandleOutsideWrap(t *testing.T) {
	h := Handle(func(w http.ResponseWriter, r *http.Request) error { return errors.New("plain") })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || rec.Body.String() != `"plain"` {
		t.Errorf("got %d %q", rec.Code, rec.Body.String())
	}
}

func TestRolloutPrefix(t *testing.T) {
	h := Wrap(testRuntime(io.Discard), echoHandler(nil))
	tests := []struct {
		target     string
		wantStatus int
		wantPath   string
		wantRaw    string
		wantID     string
		wantCap    bool
		wantErr    string
	}{
		{target: "/whoami", wantStatus: 200, wantPath: "/whoami"},
		{target: "/ng-rollout/17-3/whoami", wantStatus: 200, wantPath: "/whoami", wantID: "17-3"},
		{target: "/ng-rollout/my.run_7-a2/v1/responses", wantStatus: 200, wantPath: "/v1/responses", wantID: "my.run_7-a2"},
		{target: "/ng-rollout/0-0/training-token-capture/v1/responses", wantStatus: 200, wantPath: "/v1/responses", wantID: "0-0", wantCap: true},
		{target: "/ng-rollout/0-0/training-token-captured/v1/x", wantStatus: 404},
		{target: "/ng-rollout/a%2Bb/whoami", wantStatus: 200, wantPath: "/whoami", wantID: "a+b"},
		{target: "/ng-rollout/x/v1/a%2Fb", wantStatus: 200, wantPath: "/v1/a/b", wantRaw: "/v1/a%2Fb", wantID: "x"},
		{target: "/ng-rollout/x/training-token-capture", wantStatus: 200, wantPath: "/", wantID: "x", wantCap: true},
		{target: "/ng-rollout/x", wantStatus: 200, wantPath: "/", wantID: "x"},
		{target: "/ng-rollout", wantStatus: 404},
		{target: "/ng-rollout//whoami", wantStatus: 400, wantErr: "must be 1 to 200 characters"},
		{target: "/ng-rollout/a%20b/whoami", wantStatus: 400, wantErr: "only printable ASCII"},
		{target: "/ng-rollout/a%2Fb/whoami", wantStatus: 400, wantErr: "only printable ASCII"},
		{target: "/ng-rollout/%C3%A9/whoami", wantStatus: 400, wantErr: "only printable ASCII"},
		{target: "/ng-rollout/" + strings.Repeat("x", 201) + "/whoami", wantStatus: 400, wantErr: "not 201"},
		{target: "/ng-rollout/" + strings.Repeat("x", 200) + "/whoami", wantStatus: 200, wantPath: "/whoami", wantID: strings.Repeat("x", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", tt.target, nil))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantErr != "" {
				var msg string
				if err := json.Unmarshal(rec.Body.Bytes(), &msg); err != nil || !strings.Contains(msg, tt.wantErr) {
					t.Errorf("400 body %s, want a JSON string containing %q", rec.Body, tt.wantErr)
				}
				return
			}
			if rec.Code != 200 {
				return
			}
			if tt.wantPath == "/" {
				if rec.Body.String() != `{"status":"ok"}` {
					t.Errorf("body %s, want liveness", rec.Body)
				}
				return
			}
			var got echoReply
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Path != tt.wantPath || got.RawPath != tt.wantRaw || got.RolloutID != tt.wantID || got.Capture != tt.wantCap {
				t.Errorf("routed as %+v, want path %q raw %q id %q capture %v", got, tt.wantPath, tt.wantRaw, tt.wantID, tt.wantCap)
			}
		})
	}
}

func TestLivenessMethods(t *testing.T) {
	h := Wrap(testRuntime(io.Discard), http.NotFoundHandler())
	for method, want := range map[string]int{"GET": 200, "HEAD": 200, "POST": 404} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/", nil))
		if rec.Code != want {
			t.Errorf("%s / = %d, want %d", method, rec.Code, want)
		}
	}
}

func TestDecodeJSONOffsets(t *testing.T) {
	// Positions are what Python's json.JSONDecodeError.pos reports, which
	// FastAPI puts in loc.
	tests := []struct {
		body string
		pos  int
	}{
		{`{"a":}`, 5},
		{`{"a":`, 5},
		{`{`, 1},
		{`x`, 0},
		{`{"a":1} x`, 8},
		{`{"é":}`, 5},
		{`[1,]`, 3},
		{`{"a" 1}`, 5},
		{`  `, 2},
		{`{"a":1,}`, 7},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			var v any
			err := DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(tt.body)), &v)
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Details) != 1 {
				t.Fatalf("err = %v", err)
			}
			d := ve.Details[0]
			if d.Type != "json_invalid" || d.Msg != "JSON decode error" || len(d.Loc) != 2 || d.Loc[0] != "body" || d.Loc[1] != tt.pos {
				t.Errorf("detail %+v, want json_invalid at %d", d, tt.pos)
			}
			if !strings.Contains(err.Error(), "body.") {
				t.Errorf("Error() = %q", err)
			}
		})
	}
}

func TestDecodeJSONReadError(t *testing.T) {
	r := httptest.NewRequest("POST", "/", io.MultiReader(strings.NewReader("{"), errReader{}))
	var v any
	err := DecodeJSON(r, &v)
	var ve *ValidationError
	if err == nil || errors.As(err, &ve) || !strings.Contains(err.Error(), "reading the request body") {
		t.Errorf("err = %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestValidationErrorBodyFallback(t *testing.T) {
	ve := &ValidationError{Details: []ValidationDetail{{Type: "x", Loc: []any{"body"}, Msg: "m", Input: func() {}}}}
	var s string
	if err := json.Unmarshal(ve.body(), &s); err != nil || s != "invalid request: body: m" {
		t.Errorf("body %s", ve.body())
	}
}

func TestTrackingWriterFlushAndUnwrap(t *testing.T) {
	rec := httptest.NewRecorder()
	tw := &trackingWriter{w: rec}
	if err := http.NewResponseController(tw).Flush(); err != nil || !rec.Flushed || !tw.started {
		t.Errorf("Flush through the wrapper: err %v flushed %v started %v", err, rec.Flushed, tw.started)
	}
	tw2 := &trackingWriter{w: httptest.NewRecorder()}
	tw2.WriteHeader(http.StatusEarlyHints)
	if tw2.started {
		t.Error("a 1xx header counted as the response start")
	}
}

func TestJSONStringNoHTMLEscaping(t *testing.T) {
	if got := string(jsonString(`<a & "b">`)); got != `"<a & \"b\">"` {
		t.Errorf("jsonString = %s", got)
	}
	if !bytes.Equal(jsonString("é"), []byte(`"é"`)) {
		t.Error("non-ASCII escaped")
	}
}

func TestDecodeJSONTypeMismatch(t *testing.T) {
	type target struct {
		S string            `json:"s"`
		I int               `json:"i"`
		B bool              `json:"b"`
		L []int             `json:"l"`
		M map[string]int    `json:"m"`
		O struct{ X int }   `json:"o"`
		N map[string]string `json:"n"`
	}
	tests := []struct {
		body    string
		typ     string
		wantLoc []any
	}{
		{`{"s": 1}`, "string_type", []any{"body", "s"}},
		{`{"i": "1"}`, "int_type", []any{"body", "i"}},
		{`{"i": 1.5}`, "int_type", []any{"body", "i"}},
		{`{"b": "yes"}`, "bool_type", []any{"body", "b"}},
		{`{"l": {}}`, "list_type", []any{"body", "l"}},
		{`{"m": []}`, "dict_type", []any{"body", "m"}},
		{`{"o": 3}`, "model_attributes_type", []any{"body", "o"}},
		// encoding/json names the map, not the key, of a bad map value.
		{`{"n": {"k": 2}}`, "string_type", []any{"body", "n"}},
		{`[1]`, "model_attributes_type", []any{"body"}},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			var v target
			err := DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(tt.body)), &v)
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Details) != 1 {
				t.Fatalf("err = %v", err)
			}
			d := ve.Details[0]
			if d.Type != tt.typ || !strings.HasPrefix(d.Msg, "Input should be a valid") || d.Input != nil {
				t.Errorf("detail %+v, want %s", d, tt.typ)
			}
			if len(d.Loc) != len(tt.wantLoc) {
				t.Fatalf("loc %v, want %v", d.Loc, tt.wantLoc)
			}
			for i := range d.Loc {
				if d.Loc[i] != tt.wantLoc[i] {
					t.Errorf("loc %v, want %v", d.Loc, tt.wantLoc)
				}
			}
		})
	}
}

func TestPanicAfterResponseStartedAborts(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		panic("late")
	})
	srv := httptest.NewServer(Wrap(testRuntime(io.Discard), h))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("a panic mid-response was not signalled to the client")
	}
}

func TestSessionCookieRejectsForgeries(t *testing.T) {
	c := newSessionCookie("S___i")
	id := newUUID()
	good := id + "." + c.sign(id)
	otherKey := newSessionCookie("S___other")
	for _, v := range []string{
		"", "nodot", "." + c.sign(id), id + ".", id + ".short", id + "." + c.sign(id)[1:] + "!",
		newUUID() + "." + c.sign(id), id + "." + otherKey.sign(id),
	} {
		if _, ok := c.verify(v); ok {
			t.Errorf("verify(%q) accepted", v)
		}
	}
	if got, ok := c.verify(good); !ok || got != id {
		t.Errorf("verify(good) = %q, %v", got, ok)
	}
	// A request carrying a forged cookie beside a good one keeps the
	// good session.
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: "S___i", Value: "forged.x"})
	r.AddCookie(&http.Cookie{Name: "S___i", Value: good})
	if got, token := c.session(r); got != id || token != good {
		t.Errorf("session = %q, %q", got, token)
	}
}

func TestResponseControllerReachesConnection(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Errorf("SetWriteDeadline through the middleware: %v", err)
		}
	})
	srv := httptest.NewServer(Wrap(testRuntime(io.Discard), h))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestAccessorsOutsideWrap(t *testing.T) {
	r := httptest.NewRequest("GET", "/ng-rollout/x/y", nil)
	if SessionID(r) != "" || RolloutID(r) != "" || TokenCapture(r) {
		t.Error("accessors invented values for a request the middleware never saw")
	}
}

// DecodeJSONObject answers what DecodeJSON into a json.RawMessage answers,
// with the members jsonl.Members finds.
func TestDecodeJSONObjectIsDecodeJSON(t *testing.T) {
	for _, body := range []string{
		`{"a":1,"b":{"c":[2]},"a":"x"}`, ` {} `, `[1,2]`, `"s"`, `null`, `{"a":}`, `{"a":1} x`, ``, `  `, `{"\u0061":1}`,
	} {
		var want json.RawMessage
		wantErr := DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(body)), &want)
		got, members, object, err := DecodeJSONObject(httptest.NewRequest("POST", "/", strings.NewReader(body)), nil)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !bytes.Equal(got, want) {
			t.Errorf("%q: %q, %v; DecodeJSON %q, %v", body, got, err, want, wantErr)
			continue
		}
		wantMembers, wantObject, _ := jsonl.Members(want, nil)
		if err == nil && (object != wantObject || !slices.Equal(members, wantMembers)) {
			t.Errorf("%q: members %v (object %v), jsonl.Members %v (%v)", body, members, object, wantMembers, wantObject)
		}
	}
}

// A body that ends before the length it declared, with a plain io.EOF (an
// in-process request's can), is decoded as read, as io.ReadAll reads it.
func TestDecodeJSONShortBodyIsReadAsSent(t *testing.T) {
	r := httptest.NewRequest("POST", "/", strings.NewReader("{}"))
	r.ContentLength = 10
	var raw json.RawMessage
	if err := DecodeJSON(r, &raw); err != nil || string(raw) != "{}" {
		t.Errorf("DecodeJSON = %q, %v; want {}", raw, err)
	}
}

// uvicorn_logging_show_200_ok: a line of uvicorn's access log a request,
// with the request line as it came and the status that went out.
func TestAccessLog(t *testing.T) {
	var lines bytes.Buffer
	rt := testRuntime(io.Discard)
	rt.serving.accessLog = &lines
	m := Wrap(rt, echoHandler(nil))
	for _, tc := range []struct {
		method, target, body, want string
	}{
		{"GET", "/", "", `"GET / HTTP/1.1" 200 OK`},
		{"POST", "/ng-rollout/7-0/echo?x=1", `{"a":1}`, `"POST /ng-rollout/7-0/echo?x=1 HTTP/1.1" 200 OK`},
		{"POST", "/echo", `{"a":}`, `"POST /echo HTTP/1.1" 422 Unprocessable Content`},
		{"GET", "/nowhere", "", `"GET /nowhere HTTP/1.1" 404 Not Found`},
		{"GET", "/fail/panic", "", `"GET /fail/panic HTTP/1.1" 500 Internal Server Error`},
		{"GET", "/fail/upstream", "", `"GET /fail/upstream HTTP/1.1" 401 Unauthorized`},
	} {
		lines.Reset()
		req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
		m.ServeHTTP(httptest.NewRecorder(), req)
		if want := "INFO:     192.0.2.1:1234 - " + tc.want + "\n"; lines.String() != want {
			t.Errorf("%s %s logged %q, want %q", tc.method, tc.target, lines.String(), want)
		}
	}
}

// The line is uvicorn's for an IPv6 client, a quote or an empty query in
// the target, and a response cut off once begun; one cut off before it
// began is not logged.
func TestAccessLogAsUvicornWritesIt(t *testing.T) {
	var lines bytes.Buffer
	rt := testRuntime(io.Discard)
	rt.serving.accessLog = &lines
	mux := http.NewServeMux()
	mux.HandleFunc("/abort-before", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	mux.HandleFunc("/abort-after", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) {})
	m := Wrap(rt, mux)
	for _, tc := range []struct {
		remote, target, want string
	}{
		{"[::1]:52064", "/x", `INFO:     ::1:52064 - "GET /x HTTP/1.1" 200 OK` + "\n"},
		{"192.0.2.1:1234", `/a"b?q="1"`, `INFO:     192.0.2.1:1234 - "GET /a%22b?q=%221%22 HTTP/1.1" 200 OK` + "\n"},
		{"192.0.2.1:1234", "/p?", `INFO:     192.0.2.1:1234 - "GET /p HTTP/1.1" 200 OK` + "\n"},
		{"192.0.2.1:1234", "/abort-after", `INFO:     192.0.2.1:1234 - "GET /abort-after HTTP/1.1" 202 Accepted` + "\n"},
		{"192.0.2.1:1234", "/abort-before", ""},
	} {
		lines.Reset()
		req := httptest.NewRequest("GET", "/", nil)
		req.RequestURI, req.RemoteAddr = tc.target, tc.remote
		u, err := url.ParseRequestURI(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		req.URL = u
		func() {
			defer func() {
				if v := recover(); v != nil && v != http.ErrAbortHandler {
					t.Errorf("%s: panicked with %v", tc.target, v)
				}
			}()
			m.ServeHTTP(httptest.NewRecorder(), req)
		}()
		if lines.String() != tc.want {
			t.Errorf("%s from %s logged %q, want %q", tc.target, tc.remote, lines.String(), tc.want)
		}
	}
}

// A handler that writes nothing sends net/http's 200, and its line says so.
func TestAccessLogOfAnEmptyAnswer(t *testing.T) {
	var lines bytes.Buffer
	rt := testRuntime(io.Discard)
	rt.serving.accessLog = &lines
	m := Wrap(rt, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	m.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", "/x", nil))
	if want := "INFO:     192.0.2.1:1234 - \"DELETE /x HTTP/1.1\" 200 OK\n"; lines.String() != want {
		t.Errorf("logged %q, want %q", lines.String(), want)
	}
	// An in-process request (the agent's self-call) has no request line
	// read off the wire: its URL stands in.
	lines.Reset()
	req, err := InProcessRequest(context.Background(), "POST", "/v1/responses?stream=false", nil)
	if err != nil {
		t.Fatal(err)
	}
	m.ServeHTTP(httptest.NewRecorder(), req)
	if want := "INFO:     127.0.0.1:0 - \"POST /v1/responses?stream=false HTTP/1.1\" 200 OK\n"; lines.String() != want {
		t.Errorf("logged %q, want %q", lines.String(), want)
	}
}

// Serve's middleware writes the access log where the runtime says, and
// nothing otherwise.
func TestServeAccessLog(t *testing.T) {
	for _, on := range []bool{true, false} {
		rt := testRuntime(io.Discard)
		ctx, cancel := context.WithCancel(context.Background())
		out := newListenWatcher()
		if on {
			rt.serving.accessLog = out
		}
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, rt, echoHandler(nil), out) }()
		base := out.waitURL(t)
		resp, err := http.Get(base + "/quick")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		line := ` - "GET /quick HTTP/1.1" 200 OK` + "\n"
		if strings.Contains(out.String(), line) != on || strings.Contains(out.String(), "INFO:     ") != on {
			t.Errorf("access log %v: the server printed\n%s", on, out.String())
		}
	}
}
