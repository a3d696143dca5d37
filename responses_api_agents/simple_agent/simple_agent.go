// Package simpleagent is NeMo Gym's simple_agent in Go: the tool-calling
// agent behind most environments. /run seeds a resources-server session,
// runs the episode through the agent's own /v1/responses (the model is
// called, each function call it makes runs as POST /<name> on the
// resources server, and the outputs go back to the model until it answers),
// then has the resources server verify the result.
package simpleagent

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/nemo-gym-go/gym/internal/agent"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind and ClassName as NeMo Gym names them, so the session cookie is
// `SimpleAgent___<instance>` as with the Python server.
const (
	Kind      = "responses_api_agents/simple_agent"
	ClassName = "SimpleAgent"
)

func init() {
	server.Register(Kind, ClassName, New, slices.Concat(agent.ConfigKeys, []string{"resources_server", "model_server", "max_steps"})...)
}

// simpleAgent is one configured agent; it keeps no per-rollout state, which
// travels in cookies and request bodies.
type simpleAgent struct {
	*agent.Base
	// maxSteps caps model calls per episode; 0 is no cap.
	maxSteps     int
	resourcesURL string
	modelURL     string
	// modelServer is the model server's instance name (model_ref.name).
	modelServer string
	// self is the agent's own wrapped handler: /run's call to
	// /v1/responses goes through it in-process, with the same middleware
	// (prefix routing, session cookie, error mapping) an HTTP call would
	// meet, minus a loopback round trip per rollout.
	self http.Handler
}

// New builds the agent's routes from its config section. The prefixed
// /ng-rollout/<id>[/training-token-capture]/v1/responses routes need no
// registration: server.Wrap serves them as /v1/responses and remembers the
// prefix for the model calls.
func New(rt *server.Runtime) (http.Handler, error) {
	a, err := newAgent(rt)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /run", server.Handle(a.run))
	mux.Handle("POST /v1/responses", server.Handle(a.responses))
	mux.Handle("POST /aggregate_metrics", server.Handle(a.ProxyAggregateMetrics(a.resourcesURL)))
	a.self = server.Wrap(rt, mux)
	return mux, nil
}

func newAgent(rt *server.Runtime) (*simpleAgent, error) {
	base, err := agent.New(rt)
	if err != nil {
		return nil, err
	}
	s := base.Section()
	a := &simpleAgent{Base: base}
	resources, err := s.ServerRef("resources_server", "resources_servers")
	if err != nil {
		return nil, err
	}
	model, err := s.ServerRef("model_server", "responses_api_models")
	if err != nil {
		return nil, err
	}
	a.modelServer = model
	if a.maxSteps, err = s.Int("max_steps", 0, 0); err != nil {
		return nil, err
	}
	// Addresses are fixed for the life of the run, so they are resolved
	// once, and a reference to a missing server fails at start-up rather
	// than in the first rollout.
	for _, u := range []struct {
		dst      *string
		instance string
		what     string
	}{
		{&a.resourcesURL, resources, rt.Instance + ".resources_server"},
		{&a.modelURL, model, rt.Instance + ".model_server"},
	} {
		if *u.dst, err = base.ServerURL(u.instance); err != nil {
			return nil, fmt.Errorf("%s: %w", u.what, err)
		}
	}
	return a, nil
}
