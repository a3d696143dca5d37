package rollout

import (
	"errors"
	"fmt"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// The config keys of `gym eval reverify` beyond those it shares with
// `gym eval run`: NeMo Gym's RolloutReverificationConfig.
const (
	KeyMaterializedInputs = "materialized_inputs_jsonl_fpath"
	KeyRollouts           = "rollouts_jsonl_fpath"
	KeyForce              = "force"
	KeyOverwrite          = "overwrite"
	KeyJudgeFailedOnly    = "judge_failed_only"
	KeyAppend             = "append"
	KeyInputFormat        = "input_format"
	KeyAtifManifest       = "atif_manifest_jsonl_fpath"
)

// reverifyNeMoGymOnlyKeys are RolloutReverificationConfig's settings gym
// does not implement; each set one gets a warning. (upload_rollouts is the
// trackers', internal/export.)
var reverifyNeMoGymOnlyKeys = []string{"retry_terminal_timeouts", "retry_invalid_judge_responses"}

// ReverifySettings are `gym eval reverify`'s settings, read from its
// resolved config and checked before any server starts.
type ReverifySettings struct {
	// Inputs, Rollouts and Output are the paths as given.
	Inputs, Rollouts, Output string
	Force, Overwrite, Resume bool
	DisableAggregation       bool
	JudgeFailedOnly, Append  bool
	// Limit is 0 for no limit.
	Limit       int
	Concurrency int
	ClientSettings
	// Ignored are the NeMo Gym keys set here that gym does not implement.
	Ignored []string
}

// ReadReverifySettings reads and checks the settings, with NeMo Gym's
// rules: --append only with --judge-failed-only and never with
// --overwrite, limit and concurrency at least 1 when given.
func ReadReverifySettings(s config.Settings) (ReverifySettings, error) {
	var r ReverifySettings
	var errs []error
	str := func(key string, into *string) {
		v, err := s.String(key)
		errs = append(errs, err)
		*into = v
	}
	boolean := func(key string, into *bool) {
		v, err := s.Bool(key)
		errs = append(errs, err)
		*into = v
	}
	str(KeyMaterializedInputs, &r.Inputs)
	str(KeyRollouts, &r.Rollouts)
	str(KeyOutput, &r.Output)
	boolean(KeyForce, &r.Force)
	boolean(KeyOverwrite, &r.Overwrite)
	boolean(KeyResume, &r.Resume)
	boolean(KeyDisableAggregation, &r.DisableAggregation)
	boolean(KeyJudgeFailedOnly, &r.JudgeFailedOnly)
	boolean(KeyAppend, &r.Append)
	if err := errors.Join(errs...); err != nil {
		return ReverifySettings{}, err
	}
	format, err := s.String(KeyInputFormat)
	if err != nil {
		return ReverifySettings{}, err
	}
	if manifest, _ := s.Node(KeyAtifManifest); format == "atif" || manifest != nil {
		return ReverifySettings{}, fmt.Errorf("%s=atif (%s): gym does not implement ATIF reverification; re-verify the rollouts JSONL from `gym eval run` (%s=gym, the default)", KeyInputFormat, KeyAtifManifest, KeyInputFormat)
	}
	if format != "" && format != "gym" {
		n, _ := s.Node(KeyInputFormat)
		return ReverifySettings{}, &config.BadSettingError{Key: KeyInputFormat, Flag: "--input-format", Value: n, Reason: errors.New("it must be gym or atif")}
	}
	var missing []string
	for _, k := range []struct{ key, v string }{{KeyMaterializedInputs, r.Inputs}, {KeyRollouts, r.Rollouts}, {KeyOutput, r.Output}} {
		if k.v == "" {
			missing = append(missing, k.key)
		}
	}
	if len(missing) > 0 {
		return ReverifySettings{}, &config.MissingSettingsError{Keys: missing}
	}
	if r.Append && !r.JudgeFailedOnly {
		return ReverifySettings{}, &config.BadSettingError{Key: KeyAppend, Flag: "--append", Value: mustNode(s, KeyAppend), Reason: errors.New("it is only valid together with judge_failed_only (pass --judge-failed-only)")}
	}
	if r.Append && r.Overwrite {
		return ReverifySettings{}, &config.BadSettingError{Key: KeyAppend, Flag: "--append", Value: mustNode(s, KeyAppend), Reason: errors.New("append and overwrite are mutually exclusive: one appends, the other clears")}
	}
	if r.Limit, err = positive(s, KeyLimit, "--limit", 0); err != nil {
		return ReverifySettings{}, err
	}
	if r.Concurrency, err = positive(s, KeyConcurrency, "--concurrency", DefaultConcurrency); err != nil {
		return ReverifySettings{}, err
	}
	if r.ClientSettings, err = ReadClientSettings(s); err != nil {
		return ReverifySettings{}, err
	}
	for _, k := range reverifyNeMoGymOnlyKeys {
		if n, _ := s.Node(k); n != nil {
			r.Ignored = append(r.Ignored, k)
		}
	}
	return r, nil
}

func mustNode(s config.Settings, key string) *tree.Node {
	n, _ := s.Node(key)
	return n
}

// positive reads an integer that must be at least 1 when set.
func positive(s config.Settings, key, flag string, def int) (int, error) {
	n, err := s.Node(key)
	if err != nil || n == nil {
		return def, err
	}
	v, err := s.Int(key, def)
	if err != nil {
		return 0, err
	}
	if v < 1 {
		return 0, &config.BadSettingError{Key: key, Flag: flag, Value: n, Reason: errors.New("it must be at least 1")}
	}
	return v, nil
}
