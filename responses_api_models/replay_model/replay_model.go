// Package replaymodel is an offline model server: it answers Responses API
// calls from recorded rollouts (the JSONL `gym eval run` and NeMo Gym's
// rollout collection write), turn by turn, so that an environment runs end
// to end with no model and no network — in tests, demos, CI, and to replay
// a recorded evaluation.
//
// Each recorded response.output is split into the model's turns, and each
// turn is indexed under the identity of everything before it (the request's
// instructions and input, then the items produced so far). A call whose
// input has the identity of such a prefix gets the turn recorded after it.
// The index is built once at start; a call costs one pass over its input.
package replaymodel

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/modelserver"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/resolve"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind and ClassName name the server in configs and in its session cookie
// (`ReplayModel___<instance>`).
const (
	Kind      = "responses_api_models/replay_model"
	ClassName = "ReplayModel"
)

func init() { server.Register(Kind, ClassName, New, "rollouts_jsonl_fpath", "on_miss", "model") }

// What a call that matches no recorded turn gets (on_miss).
const (
	onMissError = "error"
	onMissEcho  = "echo"
)

// New builds the server from its config section, reading and indexing the
// rollouts files before it serves.
func New(rt *server.Runtime) (http.Handler, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("finding the working directory to resolve rollouts_jsonl_fpath against: %w", err)
	}
	// A factory has no context of its own; the process ends on a signal
	// whatever the load is doing.
	b, err := newBackend(context.Background(), rt, files{lookupEnv: os.LookupEnv, cwd: cwd})
	if err != nil {
		return nil, err
	}
	return modelserver.Serve(rt, b)
}

type backend struct {
	idx    *index
	onMiss string
	model  string // reported by echo answers; "" means replay
	logger *slog.Logger
	// Never modified: the handler copies the values it relays.
	jsonHeader, sseHeader http.Header
}

func newBackend(ctx context.Context, rt *server.Runtime, fs files) (*backend, error) {
	st, err := readSettings(rt)
	if err != nil {
		return nil, err
	}
	paths, err := fs.resolve(rt.Instance, st.paths)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	idx, err := loadIndex(ctx, paths, st.model)
	if err != nil {
		return nil, fmt.Errorf("%s.rollouts_jsonl_fpath: %w", rt.Instance, err)
	}
	logger := rt.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Info("replaying recorded rollouts", "files", paths, "rollouts", len(idx.recordings),
		"turns", idx.turns, "on_miss", st.onMiss, "load_time", time.Since(start).Round(time.Millisecond))
	return &backend{
		idx: idx, onMiss: st.onMiss, model: st.model, logger: logger,
		jsonHeader: http.Header{"Content-Type": {"application/json"}},
		sseHeader:  http.Header{"Content-Type": {"text/event-stream"}},
	}, nil
}

// settings are the server's config keys.
type settings struct {
	paths  []string // rollouts_jsonl_fpath
	onMiss string   // on_miss
	model  string   // model; "" keeps each recording's own
}

func readSettings(rt *server.Runtime) (settings, error) {
	s := modelserver.Section{Instance: rt.Instance, Node: rt.Config}
	const pathKey = "rollouts_jsonl_fpath"
	var st settings
	switch n := rt.Config.Get(pathKey); {
	case n == nil || n.Kind == tree.Null:
		return st, fmt.Errorf("%s.%s: a path or a list of paths to recorded rollouts (JSONL) is required", rt.Instance, pathKey)
	case n.Kind == tree.String:
		st.paths = []string{n.Str}
	case n.Kind == tree.List:
		var err error
		if st.paths, err = s.StringList(pathKey); err != nil {
			return st, err
		}
	default:
		return st, fmt.Errorf("%s.%s: a path or a list of paths is required, got %s %s", rt.Instance, pathKey, n.Kind, n.GoString())
	}
	if len(st.paths) == 0 {
		return st, fmt.Errorf("%s.%s: the list is empty; name at least one rollouts file", rt.Instance, pathKey)
	}
	for i, p := range st.paths {
		if strings.TrimSpace(p) == "" {
			return st, fmt.Errorf("%s.%s[%d]: an empty path", rt.Instance, pathKey, i)
		}
	}
	var err error
	if st.onMiss, err = optionalString(s, "on_miss", onMissError); err != nil {
		return st, err
	}
	if st.onMiss != onMissError && st.onMiss != onMissEcho {
		return st, fmt.Errorf("%s.on_miss: must be %q (answer 404) or %q (answer with the last user message), got %q", rt.Instance, onMissError, onMissEcho, st.onMiss)
	}
	if st.model, err = optionalString(s, "model", ""); err != nil {
		return st, err
	}
	return st, nil
}

// optionalString is a string key that may be absent or null.
func optionalString(s modelserver.Section, key, def string) (string, error) {
	if n := s.Node.Get(key); n == nil || n.Kind == tree.Null {
		return def, nil
	}
	return s.String(key)
}

// files is where relative rollouts paths are looked up: each root of
// NEMO_GYM_EXTRA_ROOTS (which holds the --search-dir roots of the command
// that started the server), then the working directory (where `gym env
// start` ran, since a Go server without a Python entrypoint runs there),
// then the gym install root, where the built-in components and their data
// live. The order is NeMo Gym's for read paths.
type files struct {
	lookupEnv func(string) (string, bool)
	cwd       string
}

// installRootEnv is cmd/gym's override of the install root; a server
// inherits it from the command that started it.
const installRootEnv = "GYM_INSTALL_ROOT"

func (fs files) resolve(instance string, paths []string) ([]string, error) {
	extra, _ := fs.lookupEnv("NEMO_GYM_EXTRA_ROOTS")
	roots := resolve.NewRoots(extra, fs.cwd, "")
	out := make([]string, 0, len(paths))
	for i, p := range paths {
		if filepath.IsAbs(p) {
			out = append(out, p)
			continue
		}
		if found := fs.abs(roots.ResolveFunc(p, isFile)); isFile(found) {
			out = append(out, found)
			continue
		}
		// The install root is materialised only when it is needed.
		install, err := fs.installRoot()
		if err != nil {
			return nil, fmt.Errorf("%s.rollouts_jsonl_fpath[%d]: %s is under no search root, and the install root is unavailable: %w", instance, i, p, err)
		}
		if found := filepath.Join(install, p); isFile(found) {
			out = append(out, found)
			continue
		}
		looked := append(roots.Candidates(p), filepath.Join(install, p))
		return nil, fmt.Errorf("%s.rollouts_jsonl_fpath[%d]: %s was not found. Looked in:\n  - %s\nGive an absolute path, or one relative to the directory you ran gym in, a --search-dir, or the gym install root",
			instance, i, p, strings.Join(looked, "\n  - "))
	}
	return out, nil
}

func (fs files) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(fs.cwd, p)
}

func (fs files) installRoot() (string, error) {
	if dir, ok := fs.lookupEnv(installRootEnv); ok && dir != "" {
		return dir, nil
	}
	return "", fmt.Errorf("%s is not set; gym env start passes it to every server it starts", installRootEnv)
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// Responses answers with the recorded turn that follows the call's input.
func (b *backend) Responses(ctx context.Context, body []byte, call modelserver.CallInfo) (*modelserver.Result, error) {
	// One pass over the body's members finds both fields; separate lookups
	// would each scan the whole body, tools and all.
	var input, instructions gjson.Result
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input":
			input = v
		case "instructions":
			instructions = v
		}
		return true
	})
	if input.Type != gjson.String && !input.IsArray() {
		return openAIError(http.StatusBadRequest, "input must be a string or a list of input items", "input", "invalid_input"), nil
	}
	candidates := b.idx.answers[b.idx.key(instructions, input)]
	if len(candidates) == 0 {
		return b.miss(instructions, input, call), nil
	}
	a := candidates[pick(call.RolloutID, len(candidates))]
	// Checked first so that a busy server builds no log arguments.
	if b.logger.Enabled(ctx, slog.LevelDebug) {
		b.logger.Debug("replaying a recorded turn", "turn", a.source, "rollout", call.RolloutID)
	}
	return b.reply(a.body, call.Stream), nil
}

// ChatCompletions is not served: recorded turns are Responses output, and
// gym has no Responses → Chat Completions answer conversion to render them.
func (b *backend) ChatCompletions(context.Context, []byte, modelserver.CallInfo) (*modelserver.Result, error) {
	return openAIError(http.StatusNotImplemented,
		"replay_model replays recorded Responses API turns and does not serve /v1/chat/completions; call /v1/responses (or /v1/messages) instead",
		"", "unsupported_endpoint"), nil
}

func (b *backend) reply(body []byte, stream bool) *modelserver.Result {
	if stream {
		return &modelserver.Result{Header: b.sseHeader, Body: openai.SynthesizeResponsesSSE(body)}
	}
	return &modelserver.Result{Header: b.jsonHeader, Body: body}
}

// pick chooses among the recordings that share a conversation so far,
// such as repeats of one task: the rollout index of the rollout id
// (`<task>-<rollout>[-a<attempt>]`, sent with rollout correlation on), so
// that rollout k of a task replays the k-th recording of it, wrapping
// around; the first recording when the call carries no such id.
func pick(rolloutID string, n int) int {
	id := rolloutID
	if i := strings.LastIndex(id, "-a"); i > 0 && isDigits(id[i+2:]) {
		id = id[:i]
	}
	i := strings.LastIndexByte(id, '-')
	if i < 0 || !isDigits(id[i+1:]) {
		return 0
	}
	k, err := strconv.Atoi(id[i+1:])
	if err != nil {
		return 0
	}
	return k % n
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// miss answers a call no recorded turn follows: a 404 that names the
// closest recording and where the call leaves it, or, with on_miss: echo,
// an assistant message repeating the last user text.
func (b *backend) miss(instructions, input gjson.Result, call modelserver.CallInfo) *modelserver.Result {
	if b.onMiss == onMissEcho {
		b.logger.Debug("no recorded turn follows this input; echoing the last user message", "rollout", call.RolloutID)
		return b.reply(b.echo(input), call.Stream)
	}
	msg := b.idx.explainMiss(instructions, input)
	b.logger.Warn("no recorded turn follows this input", "rollout", call.RolloutID, "detail", msg)
	return openAIError(http.StatusNotFound, msg, "input", "replay_not_found")
}

func (b *backend) echo(input gjson.Result) []byte {
	var text string
	forEachInputItem(input, func(item gjson.Result) {
		if item.Get("role").Str == "user" {
			text = textOf(item.Get("content"))
		}
	})
	model := b.model
	if model == "" {
		model = "replay"
	}
	return []byte(`{"id":"resp_replay_echo","object":"response","created_at":` + strconv.FormatInt(time.Now().Unix(), 10) +
		`,"model":` + quote(model) + `,"status":"completed","error":null,"incomplete_details":null,"output":[` +
		`{"type":"message","id":"msg_replay_echo","role":"assistant","status":"completed","content":[{"type":"output_text","text":` + quote(text) + `,"annotations":[]}]}],` +
		`"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"usage":null}`)
}

// openAIError is an error answer in OpenAI's shape, which OpenAI clients
// parse into their API error types; an empty param is null.
func openAIError(status int, msg, param, code string) *modelserver.Result {
	p := "null"
	if param != "" {
		p = quote(param)
	}
	typ := "invalid_request_error"
	if status == http.StatusNotFound {
		typ = "not_found_error"
	}
	body := `{"error":{"message":` + quote(msg) + `,"type":"` + typ + `","param":` + p + `,"code":"` + code + `"}}`
	return &modelserver.Result{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
}
