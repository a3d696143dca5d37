package capture

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/server"
)

// BenchmarkRecordCall is the recorder's cost per call: a recorded
// mcqa_example exchange (its request and the replayed answer) appended to
// its rollout's capture file, as every model server does with
// observability_enabled.
func BenchmarkRecordCall(b *testing.B) {
	answer, err := os.ReadFile("testdata/response.json")
	if err != nil {
		b.Fatal(err)
	}
	request, err := os.ReadFile("testdata/request.json")
	if err != nil {
		b.Fatal(err)
	}
	store, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	rt := &server.Runtime{Instance: "policy_model", ServerType: "responses_api_models", Implementation: "t", ClassName: "SimpleModelServer"}
	h := server.Wrap(rt, (&Recorder{Store: store, Server: "policy_model"}).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})))
	b.SetBytes(int64(len(answer) + len(request)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := httptest.NewRequest("POST", "/ng-rollout/"+strconv.Itoa(i)+"-0/v1/responses", strings.NewReader(string(request)))
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}
