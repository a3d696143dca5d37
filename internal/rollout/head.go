package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

// HeadConfig fetches the global config from a running head server, the way
// NeMo Gym's clients find every server: /global_config_dict_yaml answers a
// JSON string whose content is the YAML.
func HeadConfig(ctx context.Context, client *server.Client, headURL string) (*tree.Node, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, headURL+"/global_config_dict_yaml", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("no head server answers at %s (start the servers with `gym env start` and the same config, or set head_server.host/port): %w", headURL, err)
	}
	defer resp.Body.Close()
	var text string
	if err := json.NewDecoder(resp.Body).Decode(&text); err != nil {
		return nil, fmt.Errorf("the head server at %s answered /global_config_dict_yaml with something that is not a JSON string: %w", headURL, err)
	}
	return config.ParseChildConfig(text)
}
