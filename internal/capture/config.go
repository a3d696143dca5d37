package capture

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Settings are NeMo Gym's ModelCallCaptureConfig: observability_enabled
// and model_call_capture_dir, global keys every model server and the
// collector read.
type Settings struct {
	Enabled bool
	Dir     string
}

// SettingsFrom reads and checks the settings as NeMo Gym does: the
// directory is required, and absolute, only when capture is on.
func SettingsFrom(global *tree.Node) (Settings, error) {
	var s Settings
	if global == nil {
		return s, nil
	}
	enabled, err := LaxBool(global.Get("observability_enabled"))
	if err != nil {
		return s, fmt.Errorf("invalid configuration: observability_enabled: %w", err)
	}
	if !enabled {
		return s, nil
	}
	dir := global.Get("model_call_capture_dir")
	if dir == nil || dir.Kind == tree.Null {
		return s, fmt.Errorf("invalid configuration: model_call_capture_dir is required when observability_enabled=true")
	}
	if dir.Kind != tree.String || !filepath.IsAbs(dir.Str) {
		return s, fmt.Errorf("invalid configuration: model_call_capture_dir must be an absolute path, got %s", describe(dir))
	}
	return Settings{Enabled: true, Dir: filepath.Clean(dir.Str)}, nil
}

// LaxBool is pydantic's reading of a bool: true/false, 0/1, and the
// words it knows.
func LaxBool(n *tree.Node) (bool, error) {
	if n == nil || n.Kind == tree.Null {
		return false, nil
	}
	switch n.Kind {
	case tree.Bool:
		return n.Bool, nil
	case tree.Int:
		switch n.Int {
		case 0:
			return false, nil
		case 1:
			return true, nil
		}
	case tree.String:
		switch strings.ToLower(strings.TrimSpace(n.Str)) {
		case "1", "on", "t", "true", "y", "yes":
			return true, nil
		case "0", "off", "f", "false", "n", "no":
			return false, nil
		}
	}
	return false, fmt.Errorf("Input should be a valid boolean, unable to interpret input %s", describe(n))
}

func describe(n *tree.Node) string {
	if n.Kind == tree.String {
		return fmt.Sprintf("%q", n.Str)
	}
	return n.GoString()
}
