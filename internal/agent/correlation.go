package agent

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/server"
)

// The keys rollout collection stamps on a /run row (spec §5.2, §7.1).
const (
	RolloutIDKey    = "_ng_rollout_id"
	TaskIndexKey    = "_ng_task_index"
	RolloutIndexKey = "_ng_rollout_index"
	AttemptIndexKey = "_ng_attempt_index"
)

const (
	rolloutPrefix       = "/ng-rollout/"
	tokenCaptureSegment = "/training-token-capture"
	// Model servers name capture files <id>.capture.jsonl and reject longer
	// ids (internal/server), so a longer id fails here, where the row that
	// carries it is named, rather than as a 400 two servers away.
	maxRolloutIDLen = 200
)

// Correlation is whether an agent tags the calls of a rollout with the
// rollout's id, the /ng-rollout/<id> path prefix that lets a model server
// capture calls per rollout and keep a session on one replica (spec §7,
// seed 000). The zero value is off.
type Correlation struct {
	// On is true when observability_enabled or rollout_correlation is set,
	// or training token capture covers this agent.
	On bool
	// TokenCapture is training token capture for this agent: prefixes the
	// helpers build add /training-token-capture.
	TokenCapture bool
	// Observability is observability_enabled alone: an agent that keeps its
	// own trajectory (ng_trajectory) keeps it then.
	Observability bool
}

// RolloutIDFromRun is the rollout id of a /run row: an explicit
// _ng_rollout_id, else "<_ng_task_index>-<_ng_rollout_index>", with
// "-a<N>" appended when _ng_attempt_index is above 0. It is "" when
// correlation is off or the row has neither an explicit id nor both
// indices, and then nothing is prefixed.
//
// An id that could not name a request path is an error, never rewritten:
// a rewritten id is a key the collector cannot find the capture under.
// With correlation off the row is not read at all, so a malformed id is
// ignored, as in NeMo Gym (errata L2).
func (c Correlation) RolloutIDFromRun(body []byte) (string, error) {
	if !c.On {
		return "", nil
	}
	f := gjson.GetManyBytes(body, RolloutIDKey, TaskIndexKey, RolloutIndexKey, AttemptIndexKey)
	explicit, task, rollout, attempt := f[0], f[1], f[2], f[3]
	var id string
	if present(explicit) {
		if explicit.Type == gjson.String && len(explicit.Str) > maxRolloutIDLen {
			return "", fmt.Errorf("%s must be a string of letters, digits, dots, dashes or underscores starting with a letter or digit, at most %d characters; got %s",
				RolloutIDKey, maxRolloutIDLen, shortJSON(explicit.Raw))
		}
		if explicit.Type != gjson.String || !validRolloutID(explicit.Str) {
			// NeMo Gym's words, which rows quote (_ng_token_capture.error).
			got := shortJSON(explicit.Raw)
			if explicit.Type == gjson.String {
				got = shortJSON(interp.PythonStrRepr(explicit.Str))
			}
			return "", fmt.Errorf("%s must be a string of letters, digits, dots, dashes or underscores starting with a letter or digit; got %s",
				RolloutIDKey, got)
		}
		id = explicit.Str
	} else {
		if !present(task) || !present(rollout) {
			return "", nil
		}
		t, err := indexText(TaskIndexKey, task)
		if err != nil {
			return "", err
		}
		r, err := indexText(RolloutIndexKey, rollout)
		if err != nil {
			return "", err
		}
		id = t + "-" + r
	}
	if present(attempt) {
		n, err := attemptNumber(attempt)
		if err != nil {
			return "", err
		}
		if n > 0 {
			id += "-a" + strconv.FormatInt(n, 10)
		}
	}
	if !validRolloutID(id) {
		return "", fmt.Errorf("the rollout id %s built from %s and %s cannot name a request path: it must be letters, digits, dots, dashes or underscores starting with a letter or digit, at most %d characters",
			shortJSON(strconv.Quote(id)), TaskIndexKey, RolloutIndexKey, maxRolloutIDLen)
	}
	return id, nil
}

// URLPathForRun is path under this run's rollout prefix,
// /ng-rollout/<id>[/training-token-capture]<path>, or path unchanged when
// RolloutIDFromRun gives no id. An agent uses it for the calls it makes
// while handling /run: its self-call to /v1/responses, whose prefixed route
// carries the id into the tool loop, and any direct model-server call.
func (c Correlation) URLPathForRun(path string, body []byte) (string, error) {
	id, err := c.RolloutIDFromRun(body)
	if err != nil {
		return "", err
	}
	return RolloutPath(id, c.TokenCapture, path), nil
}

// BaseURLForRun is the base-URL form of URLPathForRun, for harnesses that
// configure an OpenAI client once per rollout: baseURL without trailing
// slashes plus this run's prefix, or baseURL unchanged without an id. The
// caller appends /v1 afterwards.
func (c Correlation) BaseURLForRun(baseURL string, body []byte) (string, error) {
	id, err := c.RolloutIDFromRun(body)
	if err != nil || id == "" {
		return baseURL, err
	}
	return strings.TrimRight(baseURL, "/") + RolloutPath(id, c.TokenCapture, ""), nil
}

// URLPathForRequest carries the rollout prefix r arrived under onto path:
// a request served as /ng-rollout/<id>[/training-token-capture]/v1/responses
// makes its model calls under the same prefix. An unprefixed request leaves
// path unchanged. r must have passed through server.Wrap, which strips the
// prefix and remembers it.
func URLPathForRequest(path string, r *http.Request) string {
	return RolloutPath(server.RolloutID(r), server.TokenCapture(r), path)
}

// RolloutPath is path under the prefix of rollout id:
// /ng-rollout/<id><path>, with /training-token-capture after the id when
// tokenCapture is set; path unchanged when id is "". The id is escaped, so a
// looser id that a Python agent forwarded still makes a well-formed path.
func RolloutPath(id string, tokenCapture bool, path string) string {
	if id == "" {
		return path
	}
	p := rolloutPrefix + url.PathEscape(id)
	if tokenCapture {
		p += tokenCaptureSegment
	}
	return p + path
}

// present is Python's "is not None" for a field of a JSON object.
func present(v gjson.Result) bool { return v.Exists() && v.Type != gjson.Null }

// validRolloutID is NeMo Gym's ^[A-Za-z0-9][A-Za-z0-9._-]*$, bounded.
func validRolloutID(id string) bool {
	if id == "" || len(id) > maxRolloutIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// indexText renders an index as NeMo Gym's f-string does: numbers as
// written (the collector writes integers), strings as they are.
func indexText(key string, v gjson.Result) (string, error) {
	switch v.Type {
	case gjson.Number:
		return v.Raw, nil
	case gjson.String:
		return v.Str, nil
	}
	return "", fmt.Errorf("%s must be a number or a string to build a rollout id, got %s", key, shortJSON(v.Raw))
}

// attemptNumber is Python's int(): numbers truncate, strings of digits
// parse.
func attemptNumber(v gjson.Result) (int64, error) {
	switch v.Type {
	case gjson.Number:
		return int64(v.Num), nil
	case gjson.String:
		if n, err := strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s must be an integer, got %s", AttemptIndexKey, shortJSON(v.Raw))
}

// shortJSON cuts a value quoted into an error message, so that a hostile
// row cannot make the message huge.
func shortJSON(raw string) string {
	const max = 80
	if len(raw) > max {
		return raw[:max] + "..."
	}
	return raw
}
