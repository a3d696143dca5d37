package nemogym

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"

	_ "github.com/nemo-gym-go/gym/resources_servers/example_single_tool_call"
	_ "github.com/nemo-gym-go/gym/resources_servers/graphwalks"
	_ "github.com/nemo-gym-go/gym/resources_servers/math_with_judge"
	_ "github.com/nemo-gym-go/gym/resources_servers/mcqa"
	_ "github.com/nemo-gym-go/gym/resources_servers/ruler"
)

// needs are the config keys a server cannot be built without.
var needs = map[string]string{
	"math_with_judge": ", judge_model_server: {type: responses_api_models, name: judge}, judge_responses_create_params: {input: []}",
}

// TestGoResourcesServersReverifyModeIsNeMoGyms: each Go resources server
// answers GET /reverify_mode what its NeMo Gym 0.7.0 counterpart declares
// (REVERIFY_MODE on its config class; "unknown" when it declares none), so
// `gym eval reverify` refuses, or not, the same servers NeMo Gym's does.
func TestGoResourcesServersReverifyModeIsNeMoGyms(t *testing.T) {
	root := os.Getenv("GYM_NEMO_GYM_ROOT")
	if root == "" {
		t.Skip("GYM_NEMO_GYM_ROOT is not set: no root with nemo-gym 0.7.0 (test/nemogym/root.sh builds one; .ci/run sets it)")
	}
	declared := regexp.MustCompile(`REVERIFY_MODE(?:\s*:\s*ClassVar\[ReverifyMode\])?\s*=\s*ReverifyMode\.(\w+)`)
	var kinds []string
	for _, k := range server.Kinds() {
		if strings.HasPrefix(k, "resources_servers/") {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	if len(kinds) == 0 {
		t.Fatal("no Go resources server is linked in")
	}
	for _, kind := range kinds {
		impl := strings.TrimPrefix(kind, "resources_servers/")
		t.Run(impl, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(root, sitePackages, "resources_servers", impl, "app.py"))
			if err != nil {
				t.Fatalf("nemo-gym 0.7.0 ships no %s server: %v", impl, err)
			}
			want := "unknown"
			if m := declared.FindSubmatch(src); m != nil {
				want = strings.ToLower(string(m[1]))
			}
			rt, err := servertest.Runtime("rs:\n  resources_servers:\n    "+impl+": {entrypoint: app.py, domain: other, host: 127.0.0.1, port: 1"+needs[impl]+"}\n"+
				"judge:\n  responses_api_models:\n    openai_model: {entrypoint: app.py, host: 127.0.0.1, port: 2}\n", "rs")
			if err != nil {
				t.Fatal(err)
			}
			factory, _ := server.Lookup(kind)
			h, err := factory(rt)
			if err != nil {
				t.Fatalf("building the Go %s server: %v", impl, err)
			}
			srv := httptest.NewServer(server.Wrap(rt, h))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/reverify_mode")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got string
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /reverify_mode: %s, %v", resp.Status, err)
			}
			if got != want {
				t.Errorf("the Go %s server answers %q; NeMo Gym's declares %q", impl, got, want)
			}
		})
	}
}
