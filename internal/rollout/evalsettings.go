package rollout

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

// The config keys of `gym eval run`: NeMo Gym's names, plus gym's own for
// the per-rollout timeout and retries.
const (
	KeyResume             = "resume_from_cache"
	KeyAgent              = "agent_name"
	KeyInput              = "input_jsonl_fpath"
	KeyOutput             = "output_jsonl_fpath"
	KeyLimit              = "limit"
	KeyShard              = "shard"
	KeyNumRepeats         = "num_repeats"
	KeyAddSeed            = "num_repeats_add_seed"
	KeyInterleaveRepeats  = "interleave_repeats"
	KeyPromptConfig       = "prompt_config"
	KeyConcurrency        = "num_samples_in_parallel"
	KeySplit              = "split"
	KeyDisableAggregation = "disable_aggregation"
	KeyReuseCollation     = "reuse_existing_data_preparation"
	KeyParams             = "responses_create_params"
	KeyTimeout            = "rollout_timeout_seconds"
	KeyMaxRetries         = "rollout_max_retries"
	keySkills             = "skills"
	keyDriver             = "rollout_collection_driver"
)

// Defaults of the settings that have one.
const (
	DefaultConcurrency = 256
	DefaultTimeout     = 3 * time.Hour
	DefaultMaxRetries  = 3
)

// EvalSettings are `gym eval run`'s settings read from its resolved config,
// every value checked before anything is collated or started.
type EvalSettings struct {
	// Output is output_jsonl_fpath as given; Input input_jsonl_fpath
	// (required with NoServe); Split the dataset type to collate (required
	// without it).
	Output, Input, Split string
	Resume               bool
	Shard                Shard
	Agent                string
	Limit                int
	Repeats              Repeats
	AddSeed              bool
	// InterleaveRepeats dispatches the repeats round by round.
	InterleaveRepeats bool
	// Overrides is responses_create_params as a JSON object; nil for none.
	Overrides          json.RawMessage
	PromptConfig       string
	Concurrency        int
	DisableAggregation bool
	ReuseCollation     bool
	ClientSettings
	// Ignored are the NeMo Gym collection keys set here that gym does not
	// implement, for a warning each.
	Ignored []string
}

// ReadEvalSettings reads and checks the settings; noServe collects against
// running servers (input required) instead of collating a split.
func ReadEvalSettings(s config.Settings, noServe bool) (EvalSettings, error) {
	var e EvalSettings
	var err error
	str := func(key string, into *string) {
		if err == nil {
			*into, err = s.String(key)
		}
	}
	boolean := func(key string, into *bool) {
		if err == nil {
			*into, err = s.Bool(key)
		}
	}
	integer := func(key string, def int, into *int) {
		if err == nil {
			*into, err = s.Int(key, def)
		}
	}
	str(KeyOutput, &e.Output)
	str(KeySplit, &e.Split)
	str(KeyInput, &e.Input)
	str(KeyAgent, &e.Agent)
	str(KeyPromptConfig, &e.PromptConfig)
	boolean(KeyResume, &e.Resume)
	boolean(KeyAddSeed, &e.AddSeed)
	boolean(KeyInterleaveRepeats, &e.InterleaveRepeats)
	boolean(KeyDisableAggregation, &e.DisableAggregation)
	boolean(KeyReuseCollation, &e.ReuseCollation)
	integer(KeyLimit, 0, &e.Limit)
	integer(KeyConcurrency, DefaultConcurrency, &e.Concurrency)
	if err == nil {
		e.ClientSettings, err = ReadClientSettings(s)
	}
	if err != nil {
		return EvalSettings{}, err
	}
	var missing []string
	if e.Output == "" {
		missing = append(missing, KeyOutput)
	}
	if !noServe && e.Split == "" {
		missing = append(missing, KeySplit)
	}
	if noServe && e.Input == "" {
		missing = append(missing, KeyInput)
	}
	if len(missing) > 0 {
		return EvalSettings{}, &config.MissingSettingsError{Keys: missing}
	}
	if driver, _ := s.String(keyDriver); driver != "" {
		return EvalSettings{}, fmt.Errorf("%s=%s names a Python collection function; gym collects natively and cannot call it", keyDriver, driver)
	}
	if n, _ := s.Node(keySkills); n != nil {
		return EvalSettings{}, fmt.Errorf("%s is set, but gym does not support agent skills yet; remove it to collect without them", keySkills)
	}
	if e.Shard, err = readShard(s); err != nil {
		return EvalSettings{}, err
	}
	if e.Limit < 0 {
		return EvalSettings{}, fmt.Errorf("invalid configuration: %s must not be negative, got %d", KeyLimit, e.Limit)
	}
	if e.Concurrency < 1 {
		return EvalSettings{}, fmt.Errorf("invalid configuration: %s must be at least 1, got %d", KeyConcurrency, e.Concurrency)
	}
	if e.Repeats, err = readRepeats(s); err != nil {
		return EvalSettings{}, err
	}
	params, err := s.Node(KeyParams)
	if err != nil {
		return EvalSettings{}, err
	}
	if e.Overrides, err = server.ObjectJSON(KeyParams, params); err != nil {
		return EvalSettings{}, err
	}
	for _, k := range NeMoGymOnlyKeys {
		if n, _ := s.Node(k); n != nil {
			e.Ignored = append(e.Ignored, k)
		}
	}
	return e, nil
}

// readShard reads shard, the I/N of --shard; unset is the whole run.
func readShard(s config.Settings) (Shard, error) {
	n, err := s.Node(KeyShard)
	if err != nil || n == nil {
		return Shard{}, err
	}
	text := config.DescribeValue(n)
	if n.Kind == tree.String {
		text = n.Str
	}
	shard, err := ParseShard(text)
	if err != nil {
		return Shard{}, &config.BadSettingError{Key: KeyShard, Flag: "--shard", Value: n, Reason: err}
	}
	return shard, nil
}

// readRepeats reads num_repeats: an int, or a map of agent → int with
// _default.
func readRepeats(s config.Settings) (Repeats, error) {
	n, err := s.Node(KeyNumRepeats)
	if err != nil || n == nil {
		return Repeats{All: 1}, err
	}
	if n.Kind == tree.Map {
		per := map[string]int{}
		for _, e := range n.Entries {
			switch {
			case e.Value.Kind == tree.Null:
				per[e.Key] = 1
			case e.Value.Kind == tree.Int && e.Value.Int >= 1:
				per[e.Key] = int(e.Value.Int)
			default:
				return Repeats{}, fmt.Errorf("invalid configuration: %s.%s must be an integer of at least 1, got %s", KeyNumRepeats, e.Key, config.DescribeValue(e.Value))
			}
		}
		return Repeats{PerAgent: per}, nil
	}
	v, err := s.Int(KeyNumRepeats, 1)
	if err != nil {
		return Repeats{}, err
	}
	if v < 1 {
		return Repeats{}, fmt.Errorf("invalid configuration: %s must be at least 1, got %d", KeyNumRepeats, v)
	}
	return Repeats{All: v}, nil
}

// ClientSettings bound each rollout's /run (and each /aggregate_metrics).
type ClientSettings struct {
	Timeout    time.Duration
	MaxRetries int
}

// ReadClientSettings reads rollout_timeout_seconds and rollout_max_retries.
func ReadClientSettings(s config.Settings) (ClientSettings, error) {
	timeout, err := s.Float(KeyTimeout, DefaultTimeout.Seconds())
	if err != nil {
		return ClientSettings{}, err
	}
	retries, err := s.Int(KeyMaxRetries, DefaultMaxRetries)
	if err != nil {
		return ClientSettings{}, err
	}
	if timeout < 0 || retries < 0 {
		return ClientSettings{}, fmt.Errorf("invalid configuration: %s and %s must not be negative", KeyTimeout, KeyMaxRetries)
	}
	return ClientSettings{Timeout: time.Duration(timeout * float64(time.Second)), MaxRetries: retries}, nil
}

// NewClient is the client of agents' /run and /aggregate_metrics for the
// servers of res. From another machine the run's servers answer only with
// runToken (NEMO_GYM_RUN_TOKEN); retry warnings go to log.
func (c ClientSettings) NewClient(res *config.Result, runToken string, log io.Writer) *server.Client {
	retries := c.MaxRetries
	if retries == 0 {
		retries = -1 // the client reads 0 as "its default"
	}
	return server.NewClient(server.ClientOptions{
		Timeout:    c.Timeout,
		MaxRetries: retries,
		RunToken:   runToken,
		RunServers: server.RunServers(res.Config, res.LookupEnv),
		Logger:     slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
}
