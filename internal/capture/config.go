package capture

import (
	"fmt"
	"path/filepath"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Settings are NeMo Gym's ModelCallCaptureConfig: observability_enabled
// and model_call_capture_dir, global keys every model server and the
// collector read.
type Settings struct {
	Enabled bool
	Dir     string
}

// SettingsFrom reads, through get, and checks the settings as NeMo Gym
// does: the directory is required, and absolute, only when capture is on.
func SettingsFrom(get func(key string) (*tree.Node, error)) (Settings, error) {
	var s Settings
	on, err := get("observability_enabled")
	if err != nil {
		return s, err
	}
	enabled, err := config.LaxBool(on)
	if err != nil {
		return s, fmt.Errorf("invalid configuration: observability_enabled: %w", err)
	}
	if !enabled {
		return s, nil
	}
	dir, err := get("model_call_capture_dir")
	if err != nil {
		return s, err
	}
	if dir == nil || dir.Kind == tree.Null {
		return s, fmt.Errorf("invalid configuration: model_call_capture_dir is required when observability_enabled=true")
	}
	if dir.Kind != tree.String || !filepath.IsAbs(dir.Str) {
		return s, fmt.Errorf("invalid configuration: model_call_capture_dir must be an absolute path, got %s", describe(dir))
	}
	return Settings{Enabled: true, Dir: filepath.Clean(dir.Str)}, nil
}

func describe(n *tree.Node) string {
	if n.Kind == tree.String {
		return fmt.Sprintf("%q", n.Str)
	}
	return n.GoString()
}

// TokenSettings are NeMo Gym's token_id_capture block as model servers and
// the collector read it.
type TokenSettings struct {
	Enabled bool
	// AllAgents captures every agent's calls, not only those of agents
	// with their own token_id_capture flag.
	AllAgents bool
	// Dir is the token store; "" when nothing is stored (rebuild_response
	// off and no directory).
	Dir string
	// Rebuild (rebuild_response) has the collector rebuild rows from the
	// capture.
	Rebuild bool
	// MaxMaskFraction stops a collection whose finalized rollouts are
	// masked more often than this, once MinSamples are finalized; negative
	// for no limit.
	MaxMaskFraction float64
	MinSamples      int64
}

// tokenKeys are the block's keys; refused is what gym does not implement
// beyond their defaults, and why.
var (
	tokenKeys = map[string]bool{
		"enabled": true, "all_agents": true, "dir": true, "sink": true, "sink_kwargs": true, "lineage_store": true,
		"lineage_store_kwargs": true, "rebuild_response": true, "allow_unresolved_continuations": true, "delta_records": true,
		"max_mask_fraction": true, "mask_fraction_min_samples": true, "external_staging": true, "external_staging_backend": true,
		"control_auth_token_env": true,
	}
	refusedTokenKeys = []struct{ key, why string }{
		{"sink", "custom token sinks are Python classes"},
		{"lineage_store", "custom lineage stores are Python classes"},
		{"external_staging", "framework-worker staging needs NeMo RL's workers"},
		{"delta_records", "entries always hold their whole prompt"},
	}
)

// TokenSettingsFrom reads the token_id_capture block, through get, and
// checks it as NeMo Gym does: with capture on, a directory is required
// (dir, else model_call_capture_dir), and absolute; unknown keys are
// refused. The settings gym does not implement are refused by name.
func TokenSettingsFrom(get func(key string) (*tree.Node, error)) (TokenSettings, error) {
	var s TokenSettings
	block, err := get("token_id_capture")
	if err != nil || block == nil || block.Kind == tree.Null {
		return s, err
	}
	if block.Kind != tree.Map {
		return s, fmt.Errorf("invalid configuration: token_id_capture must be a mapping, got %s", describe(block))
	}
	for _, k := range block.Keys() {
		if !tokenKeys[k] {
			return s, fmt.Errorf("invalid configuration: token_id_capture.%s: Extra inputs are not permitted", k)
		}
	}
	flag := func(key string) (bool, error) {
		v, err := config.LaxBool(block.Get(key))
		if err != nil {
			return false, fmt.Errorf("invalid configuration: token_id_capture.%s: %w", key, err)
		}
		return v, nil
	}
	if s.Enabled, err = flag("enabled"); err != nil || !s.Enabled {
		return TokenSettings{}, err
	}
	if s.AllAgents, err = flag("all_agents"); err != nil {
		return s, err
	}
	for _, r := range refusedTokenKeys {
		v := block.Get(r.key)
		if v == nil || v.Kind == tree.Null || (v.Kind == tree.Bool && !v.Bool) {
			continue
		}
		return s, fmt.Errorf("invalid configuration: token_id_capture.%s = %s: gym does not implement it (%s); leave it unset", r.key, describe(v), r.why)
	}
	s.Rebuild = true
	if v := block.Get("rebuild_response"); v != nil && v.Kind != tree.Null {
		if s.Rebuild, err = flag("rebuild_response"); err != nil {
			return s, err
		}
	}
	s.MaxMaskFraction, s.MinSamples = -1, 50
	if v := block.Get("max_mask_fraction"); v != nil && v.Kind != tree.Null {
		switch v.Kind {
		case tree.Float:
			s.MaxMaskFraction = v.Float
		case tree.Int:
			s.MaxMaskFraction = float64(v.Int)
		default:
			return s, fmt.Errorf("invalid configuration: token_id_capture.max_mask_fraction must be a number, got %s", describe(v))
		}
	}
	if v := block.Get("mask_fraction_min_samples"); v != nil && v.Kind != tree.Null {
		if v.Kind != tree.Int {
			return s, fmt.Errorf("invalid configuration: token_id_capture.mask_fraction_min_samples must be an integer, got %s", describe(v))
		}
		s.MinSamples = v.Int
	}
	dir := block.Get("dir")
	if dir == nil || dir.Kind == tree.Null {
		if dir, err = get("model_call_capture_dir"); err != nil {
			return s, err
		}
	}
	if (dir == nil || dir.Kind == tree.Null) && !s.Rebuild {
		return s, nil // NeMo Gym's no-op: nothing stored, nothing rebuilt
	}
	if dir == nil || dir.Kind == tree.Null {
		return s, fmt.Errorf("invalid configuration: token_id_capture requires a directory or sink (token_id_capture.dir, or model_call_capture_dir)")
	}
	if dir.Kind != tree.String || !filepath.IsAbs(dir.Str) {
		return s, fmt.Errorf("invalid configuration: token_id_capture: training-token capture directory must be an absolute path, got %s", describe(dir))
	}
	s.Dir = filepath.Clean(dir.Str)
	return s, nil
}
