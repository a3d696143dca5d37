package gymserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/nemo-gym-go/gym/gymserver"
)

// A resources server that rewards the expected answer. Its main would be
// gymserver.Main(server.ClassName, server.Handler); here its routes are
// served by a test server and /verify is called as an agent calls it.
func ExampleResourcesServer() {
	server := gymserver.ResourcesServer{
		ClassName: "ExactAnswerResourcesServer",
		Fields:    []gymserver.Field{{Name: "expected_answer", Type: gymserver.String, Required: true}},
		Reverify:  gymserver.ReverifyStateless,
		Verify: func(_ context.Context, req *gymserver.VerifyRequest) (*gymserver.Verdict, error) {
			reward := 0.0
			if strings.TrimSpace(req.OutputText()) == req.String("expected_answer") {
				reward = 1
			}
			return &gymserver.Verdict{Reward: reward, Fields: req.Echo("expected_answer")}, nil
		},
	}
	h, err := server.Handler(nil)
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()

	verify := func(body string) {
		resp, err := http.Post(ts.URL+"/verify", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		reply, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(reply))
	}
	answer := `{"type":"message","content":[{"type":"output_text","text":" 42"}]}`
	verify(`{"responses_create_params":{"input":"6 x 7?"},"response":{"output":[` + answer + `]},"expected_answer":"42"}`)
	// A row without the declared field is answered as FastAPI answers it.
	verify(`{"responses_create_params":{"input":"6 x 7?"},"response":{"output":[]}}`)
	// Output:
	// 200 {"responses_create_params":{"input":"6 x 7?"},"response":{"output":[{"type":"message","content":[{"type":"output_text","text":" 42"}]}]},"reward":1.0,"expected_answer":"42"}
	// 422 {"detail":[{"type":"missing","loc":["body","expected_answer"],"msg":"Field required","input":{"responses_create_params":{"input":"6 x 7?"},"response":{"output":[]}}}]}
}
