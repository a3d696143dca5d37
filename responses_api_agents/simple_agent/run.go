package simpleagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/agent"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/server"
)

// run is POST /run: one rollout of a dataset row (spec §5.2). The row stays
// raw JSON throughout, so every extra key reaches /seed_session and /verify
// as the collector wrote it.
func (a *simpleAgent) run(w http.ResponseWriter, r *http.Request) error {
	var scratch [16]jsonl.Member
	row, members, object, err := server.DecodeJSONObject(r, scratch[:0])
	if err != nil {
		return err
	}
	params, err := runParams(bodyParams(row, members, object))
	if err != nil {
		return err
	}
	id, err := a.RolloutIDFromRun(row)
	if err != nil {
		return err
	}
	selfPath, err := a.URLPathForRun("/v1/responses", row)
	if err != nil {
		return err
	}
	ctx := r.Context()
	client := a.Runtime.Client

	// Resources calls of a rollout carry its id too (spec §7.4), never the
	// token-capture segment, which only model servers act on.
	cookies := r.Cookies()
	_, set, err := client.PostJSON(ctx, a.resourcesURL+agent.RolloutPath(id, false, "/seed_session"), row, cookies)
	if err != nil {
		return fmt.Errorf("seeding the resources session: %w", err)
	}
	cookies = agent.RelayCookies(cookies, set)

	// The episode hands its trajectory over here rather than in the
	// response, which goes to the verifier without it.
	slot := &trajectorySlot{}
	response, selfSet, err := a.selfCall(withTrajectorySlot(ctx, slot), selfPath, params, cookies)
	if err != nil {
		return fmt.Errorf("running the episode: %w", err)
	}
	// The self-call relayed the resources and model sessions and added the
	// agent's own; /verify gets all of them.
	cookies = agent.RelayCookies(cookies, selfSet)

	withResponse, err := sjson.SetRawBytes(row, "response", response)
	if err != nil {
		return fmt.Errorf("adding the response to the row: %w", err)
	}
	var result []byte
	if a.Config.SkipVerification {
		result, err = skippedResult(withResponse, a.Config.SkipVerificationReward)
		if err != nil {
			return err
		}
	} else {
		result, _, err = client.PostJSON(ctx, a.resourcesURL+agent.RolloutPath(id, false, "/verify"), withResponse, cookies)
		if err != nil {
			return fmt.Errorf("verifying the rollout: %w", err)
		}
		if err := checkVerifyResponse(result); err != nil {
			return err
		}
	}
	if t := slot.t; t != nil && id != "" {
		t.name(gjson.ParseBytes(row), id, gjson.GetBytes(result, "resolved"))
		if result, err = setMember(result, runTrajectoryKey, t.json()); err != nil {
			return fmt.Errorf("adding the trajectory to the result: %w", err)
		}
	}
	return agent.WriteJSON(w, result)
}

// setMember sets key on a JSON object: in place when it has one, else
// appended at its end without re-reading the rest (a trajectory is most of
// a result).
func setMember(obj []byte, key, raw string) ([]byte, error) {
	end := bytes.LastIndexByte(obj, '}')
	if gjson.GetBytes(obj, key).Exists() || end < 0 {
		return sjson.SetRawBytes(obj, key, []byte(raw))
	}
	out := make([]byte, 0, len(obj)+len(key)+len(raw)+4)
	out = append(out, obj[:end]...)
	if len(bytes.TrimSpace(out)) > 1 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, key...)
	out = append(out, `":`...)
	out = append(out, raw...)
	return append(out, obj[end:]...), nil
}

// runParams checks a row as SimpleAgentRunRequest does and returns its
// responses_create_params.
func runParams(r params) ([]byte, error) {
	row := r.doc
	if !r.object {
		return nil, invalid("model_attributes_type", []any{"body"}, "Input should be a valid dictionary or object to extract fields from", json.RawMessage(row))
	}
	i := jsonl.Lookup(row, r.members, "responses_create_params")
	if i < 0 {
		return nil, invalid("missing", []any{"body", "responses_create_params"}, "Field required", json.RawMessage(row))
	}
	var scratch [16]jsonl.Member
	p := memberParams(row, r.members[i], scratch[:0])
	if err := checkParams(p, []any{"body", "responses_create_params"}); err != nil {
		return nil, err
	}
	return p.raw(), nil
}

// skippedResult is the row with the episode's response, the configured
// reward and verification_skipped: what /verify would have been asked to
// score, scored without it.
func skippedResult(withResponse []byte, reward float64) ([]byte, error) {
	out, err := sjson.SetRawBytes(withResponse, "reward", []byte(tree.PythonFloatRepr(reward)))
	if err == nil {
		out, err = sjson.SetRawBytes(out, "verification_skipped", []byte("true"))
	}
	if err != nil {
		return nil, fmt.Errorf("building the unverified result: %w", err)
	}
	return out, nil
}

// checkVerifyResponse holds the /verify reply to SimpleAgentVerifyResponse:
// the collector needs the request, the response and a numeric reward.
func checkVerifyResponse(body []byte) error {
	// In place: nothing read here outlives the call.
	v := jsonl.ParseInPlace(body)
	if !v.IsObject() {
		return fmt.Errorf("the resources server's /verify reply is not a JSON object: %s", short(body))
	}
	// The first of each member, as Get finds it, in one walk.
	var params, response, reward gjson.Result
	v.ForEach(func(k, m gjson.Result) bool {
		switch {
		case k.Str == "responses_create_params" && !params.Exists():
			params = m
		case k.Str == "response" && !response.Exists():
			response = m
		case k.Str == "reward" && !reward.Exists():
			reward = m
		}
		return true
	})
	for _, f := range []struct {
		key   string
		value gjson.Result
	}{{"responses_create_params", params}, {"response", response}} {
		if !f.value.IsObject() {
			return fmt.Errorf("the resources server's /verify reply has no %s object: %s", f.key, short(body))
		}
	}
	if reward.Type != gjson.Number {
		return fmt.Errorf("the resources server's /verify reply has no numeric reward: %s", short(body))
	}
	return nil
}

func invalid(typ string, loc []any, msg string, input any) error {
	return &server.ValidationError{Details: []server.ValidationDetail{{Type: typ, Loc: loc, Msg: msg, Input: input}}}
}

// short cuts a body quoted into an error message.
func short(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// selfCall is NeMo Gym's /run → /v1/responses self-call, made in-process
// through the agent's own middleware. Like the HTTP call it answers the
// body and the Set-Cookie lines of the response, and a non-2xx answer is an
// *server.UpstreamError.
func (a *simpleAgent) selfCall(ctx context.Context, path string, body []byte, cookies []*http.Cookie) ([]byte, server.SetCookies, error) {
	req, err := server.InProcessRequest(ctx, http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := &selfResponse{header: http.Header{}, status: http.StatusOK}
	a.self.ServeHTTP(rec, req)
	if rec.status < 200 || rec.status > 299 {
		return nil, nil, &server.UpstreamError{Status: rec.status, Body: rec.body.Bytes(), URL: path}
	}
	return rec.body.Bytes(), rec.header["Set-Cookie"], nil
}

// selfResponse is the in-process self-call's response writer.
type selfResponse struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *selfResponse) Header() http.Header { return r.header }

func (r *selfResponse) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *selfResponse) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}
