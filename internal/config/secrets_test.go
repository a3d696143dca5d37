package config

import (
	"context"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// TestResolvedMasksResolvedSecrets: `gym env resolve` resolves every value
// before it masks the secret ones, as NeMo Gym's masking walk reads each
// value it passes; so a secret that cannot be resolved fails the command,
// and one that can still prints masked.
func TestResolvedMasksResolvedSecrets(t *testing.T) {
	for _, tt := range []maskCase{
		{
			name:      "a set env var under a secret key prints masked",
			overrides: []string{"+srv.api_key=${oc.env:K}", "+srv.url='http://h/?k=${srv.api_key}'"},
			env:       map[string]string{"K": "sk-real"},
			want:      []string{"  api_key: '****'", "  url: http://h/?k=****"},
		},
		{
			name:      "an unset env var under a secret key fails, naming the key",
			overrides: []string{"+srv.nested.api_key=${oc.env:UNSET_VAR}"},
			err:       []string{"srv.nested.api_key", "Environment variable 'UNSET_VAR' not found", "cli: +srv.nested.api_key="},
		},
		{
			name:      "an unset reference under a secret key fails",
			overrides: []string{"+list=[{hf_token: '${nowhere}'}]"},
			err:       []string{"list[0].hf_token", "references 'nowhere'"},
		},
		{
			name:      "items of a secret list are masked unread, as NeMo Gym only counts them",
			overrides: []string{"+api_keys=[a, '${oc.env:UNSET_VAR}']"},
			want:      []string{"api_keys:\n- '****'\n- '****'"},
		},
		{
			name:      "the error never shows a secret override's value",
			overrides: []string{"+srv.api_key=sk-literal${oc.env:UNSET_VAR}"},
			err:       []string{"srv.api_key", "UNSET_VAR"},
			notInErr:  []string{"cli: +srv.api_key=sk-literal"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.check(t) })
	}
}

// TestIsSecretKeyRules: the key rule, by case. Counters stay visible, and
// "auth" is a secret except where it only begins "author" / "authority"
// (names and URL authorities, not credentials).
func TestIsSecretKeyRules(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		// the earlier rules
		{"api_key", true}, {"OPENAI_API_KEY", true}, {"hf_token", true}, {"client_secret", true},
		{"db_password", true}, {"max_output_tokens", false}, {"max_tokens", false},
		{"token_id_capture", false}, {"name", false},
		// credential, passwd
		{"credential", true}, {"aws_credentials", true}, {"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"passwd", true}, {"db_passwd", true},
		// auth
		{"auth", true}, {"basic_auth", true}, {"auth_header", true}, {"oauth_client", true},
		{"Authorization", true}, {"authorization", true}, {"Proxy-Authorization", true},
		{"authorisation", true}, {"authentication", true}, {"X-Auth", true},
		{"author", false}, {"authors", false}, {"author_email", false}, {"authority", false},
		{"url_authority", false}, {"authored_by", false},
		{"author_auth", true}, // a second "auth" that is not "author"
		// header-map keys
		{"Cookie", true}, {"Set-Cookie", true}, {"set-cookie", true}, {"session_cookie", true},
		{"X-Api-Key", true}, {"x-goog-api-key", true}, {"Ocp-Apim-Subscription-Key", true},
		{"X-Auth-Token", true}, {"X-Session-Token", true}, {"hf_key", true},
		{"Content-Type", false}, {"X-Request-Id", false}, {"User-Agent", false},
		{"session_key_headers", true}, // contains "key": a list of header names prints masked
	}
	for _, tt := range tests {
		if got := IsSecretKey(tt.key); got != tt.want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

// TestMaskSecretShapes: secrets recognised by the shape of a value, under
// any key: a URL's userinfo password, a Bearer token, a Basic credential.
func TestMaskSecretShapes(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://user:pass@host/v1", "http://user:****@host/v1"},
		{"https://user:p%40ss@host:8443/v1?x=1", "https://user:****@host:8443/v1?x=1"},
		{"redis://:hunter2@cache:6379/0", "redis://:****@cache:6379/0"},
		{"postgresql+psycopg://u:p@ss@db/x", "postgresql+psycopg://u:****@db/x"},
		{"a http://a:b@h1 and https://c:d@h2/p", "a http://a:****@h1 and https://c:****@h2/p"},
		{"http://a:b@h1,http://c:d@h2", "http://a:****@h1,http://c:****@h2"},
		{"HTTP://U:P@H", "HTTP://U:****@H"},
		{"http://user@host/v1", "http://user@host/v1"},       // no password
		{"http://user:@host/v1", "http://user:@host/v1"},     // empty password
		{"http://host:8000/v1", "http://host:8000/v1"},       // a port is not a password
		{"http://h/p?email=a:b@c", "http://h/p?email=a:b@c"}, // @ after the authority
		{"http://[::1]:8000/v1", "http://[::1]:8000/v1"},
		{"Bearer sk-abc.DEF_123", "Bearer ****"},
		{"bearer abc", "bearer ****"},
		{"Authorization: Bearer eyJhbGciOi.eyJzdWIi.sig", "Authorization: Bearer ****"},
		{"Bearer   tok==", "Bearer   ****"},
		{"Basic dXNlcjpwYXNz", "Basic ****"},                 // user:pass
		{"Basic dTpw", "Basic ****"},                         // u:p
		{"Basic arithmetic tasks", "Basic arithmetic tasks"}, // prose: not base64 of user:pass
		{"Basic test", "Basic test"},                         // decodes, but no ':'
		{"Bearer", "Bearer"},
		{"cupbearer x", "cupbearer x"},
		{"plain text", "plain text"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := maskSecretShapes(tt.in); got != tt.want {
			t.Errorf("maskSecretShapes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestResolvedMasksSecretShapes: `gym env resolve` masks by key in any map
// (header maps included) and by value shape in every string, also when the
// secret arrives through interpolation, and hides the same in --show-origin
// tokens and in error messages.
func TestResolvedMasksSecretShapes(t *testing.T) {
	for _, tt := range []maskCase{
		{
			name:      "url password under any key",
			overrides: []string{"+m.openai_base_url=http://user:pass@host/v1"},
			want:      []string{"  openai_base_url: http://user:****@host/v1"},
			notWant:   []string{"pass@"},
			origins:   []string{"+m.openai_base_url=http://user:****@host/v1"},
		},
		{
			name:      "url password that arrives by interpolation",
			overrides: []string{"+m.url=http://u:${oc.env:P}@h/v1", "+m.base=${oc.env:U}"},
			env:       map[string]string{"P": "pw1", "U": "https://x:pw2@h2"},
			want:      []string{"  url: http://u:****@h/v1", "  base: https://x:****@h2"},
			notWant:   []string{"pw1", "pw2"},
		},
		{
			name: "header map keys",
			overrides: []string{"+m.openai_default_headers={Authorization: 'Bearer sk-1', Proxy-Authorization: 'Basic dXNlcjpwYXNz'," +
				" Cookie: 'sid=abc', Set-Cookie: 'sid=abc', X-Api-Key: k1, X-Auth-Token: t1, Content-Type: application/json}"},
			want: []string{"    Authorization: '****'", "    Proxy-Authorization: '****'", "    Cookie: '****'",
				"    Set-Cookie: '****'", "    X-Api-Key: '****'", "    X-Auth-Token: '****'", "    Content-Type: application/json"},
			notWant: []string{"sk-1", "sid=abc", "k1", "t1", "dXNlcjpwYXNz"},
		},
		{
			name:      "bearer and basic values under ordinary keys and in lists",
			overrides: []string{"+m.h={X-Upstream: 'Bearer sk-2'}", "+m.l=['Basic dXNlcjpwYXNz', 'Basic arithmetic']"},
			want:      []string{"    X-Upstream: Bearer ****", "  - Basic ****", "  - Basic arithmetic"},
			notWant:   []string{"sk-2", "dXNlcjpwYXNz"},
			origins:   []string{"+m.h={X-Upstream: 'Bearer ****'}"},
		},
		{
			name:      "credential, passwd and auth keys; author and counters stay",
			overrides: []string{"+m.gcp_credentials=c1", "+m.db_passwd=c2", "+m.basic_auth=c3", "+m.author=Ada", "+m.authority=h:1", "+m.max_output_tokens=7"},
			want:      []string{"  gcp_credentials: '****'", "  db_passwd: '****'", "  basic_auth: '****'", "  author: Ada", "  authority: h:1", "  max_output_tokens: 7"},
			origins:   []string{"+m.basic_auth=****", "+m.author=Ada"},
		},
		{
			name:      "an error never shows a url password",
			overrides: []string{"+m.url=http://u:pw3@h/${oc.env:UNSET_VAR}"},
			err:       []string{"m.url", "UNSET_VAR"},
			notInErr:  []string{"pw3"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.check(t) })
	}
}

// maskCase is one `gym env resolve` run: the overrides (and environment) it
// gets, what its masked output, its origin tokens or its error must and
// must not show.
type maskCase struct {
	name      string
	overrides []string
	env       map[string]string
	want      []string // lines the output contains
	notWant   []string // texts neither the output nor an origin shows
	origins   []string // texts some origin token shows
	err       []string
	notInErr  []string
}

func (tt maskCase) check(t *testing.T) {
	t.Helper()
	res, err := Load(context.Background(), testEnv(t, tt.env), Request{Overrides: tt.overrides, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := res.Resolved(true)
	if len(tt.err) > 0 {
		if err == nil {
			t.Fatalf("no error; output:\n%s", dump(out))
		}
		for _, s := range tt.err {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error lacks %q:\n%v", s, err)
			}
		}
		for _, s := range tt.notInErr {
			if strings.Contains(err.Error(), s) {
				t.Errorf("error shows %q:\n%v", s, err)
			}
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	got := dump(out)
	for _, s := range tt.want {
		if !strings.Contains(got, s) {
			t.Errorf("output lacks %q:\n%s", s, got)
		}
	}
	for _, s := range tt.notWant {
		if strings.Contains(got, s) {
			t.Errorf("output shows %q:\n%s", s, got)
		}
	}
	var tokens []string
	var walk func(n *tree.Node)
	walk = func(n *tree.Node) {
		if n.Origin.Kind == tree.FromCLI {
			tokens = append(tokens, n.Origin.Token)
		}
		for _, e := range n.Entries {
			walk(e.Value)
		}
		for _, it := range n.Items {
			walk(it)
		}
	}
	walk(out)
	all := strings.Join(tokens, "\n")
	for _, s := range tt.origins {
		if !strings.Contains(all, s) {
			t.Errorf("origins lack %q:\n%s", s, all)
		}
	}
	for _, s := range tt.notWant {
		if strings.Contains(all, s) {
			t.Errorf("origins show %q:\n%s", s, all)
		}
	}
}
