package rollout

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/server"
)

// ResourcesServerMetrics gives, for an agent, the /aggregate_metrics
// handler of its resources server, built from the config in this process.
// An agent without a Go resources server gets the baseline statistics
// every resources server computes, with a warning saying why.
func ResourcesServerMetrics(res *config.Result, lookupEnv func(string) (string, bool), warn io.Writer) func(agent string) (http.Handler, error) {
	dict := config.Dump(res.Config)
	return func(agent string) (http.Handler, error) {
		rs, why := resourcesServerOf(res, agent)
		if why == "" {
			factory, ok := server.Lookup(rs.Type + "/" + rs.Implementation)
			if ok {
				env := map[string]string{config.ConfigDictEnv: dict, config.ConfigPathEnv: rs.Name}
				rt, err := server.FromEnv(func(k string) (string, bool) {
					if v, ok := env[k]; ok {
						return v, true
					}
					return lookupEnv(k)
				})
				if err != nil {
					return nil, err
				}
				return factory(rt)
			}
			why = fmt.Sprintf("its resources server %s (%s) is not built into gym", rs.Name, rs.Implementation)
		}
		fmt.Fprintf(warn, "Warning: agent %s: %s; computing the baseline reward statistics only (use --servers with the servers running for its own metrics)\n", agent, why)
		return baselineMetrics{}, nil
	}
}

// resourcesServerOf finds the resources server instance an agent uses, or
// says why it cannot.
func resourcesServerOf(res *config.Result, agent string) (*config.Instance, string) {
	var ref string
	for _, in := range res.Instances {
		if in.Name != agent {
			continue
		}
		if n := in.Config.Get("resources_server"); n != nil {
			if name := n.Get("name"); name != nil {
				ref = name.Str
			}
		}
		if ref == "" {
			return nil, "its config names no resources_server"
		}
		for _, rs := range res.Instances {
			if rs.Name == ref && rs.Type == "resources_servers" {
				return rs, ""
			}
		}
		return nil, fmt.Sprintf("its resources server %s is not in the config", ref)
	}
	return nil, "the config has no agent of that name (give the --benchmark or --config the rollouts came from)"
}

// baselineMetrics answers /aggregate_metrics with RewardProfiler's
// statistics and no benchmark-specific metrics.
type baselineMetrics struct{}

func (baselineMetrics) AggregateRows(rows func(yield func(row []byte) error) error, dir string, w io.Writer) error {
	if err := resources.AggregateRows(rows, resources.MetricsHooks{}, dir, w); err != nil {
		// As ServeHTTP answers it.
		return &answered{http.StatusInternalServerError, err.Error()}
	}
	return nil
}

func (baselineMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		VerifyResponses []json.RawMessage `json:"verify_responses"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	m, err := resources.Aggregate(body.VerifyResponses, resources.MetricsHooks{})
	if err == nil {
		var out []byte
		if out, err = json.Marshal(m); err == nil && jsonl.Valid(out) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(out)
			return
		}
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
