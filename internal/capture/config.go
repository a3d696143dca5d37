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
