package launcher

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

// HeadClient asks a running head server, gym's or NeMo Gym's, what it
// serves: the one way `gym env status`, `gym eval run --no-serve` and the
// rest find servers started elsewhere.
type HeadClient struct {
	URL  string
	HTTP *http.Client
	// Token is the run's token (GYM_RUN_TOKEN), which a head server on
	// another machine asks for before it hands out the config.
	Token string
}

// NewHeadClient is the client of the head server the config names
// (head_server.host:port, 127.0.0.1:11000 by default; an all-interfaces
// host is reached on loopback).
func NewHeadClient(res *config.Result) HeadClient {
	host, port := HeadAddress(res)
	token, _ := res.LookupEnv(server.RunTokenEnv)
	return HeadClient{
		URL:   "http://" + net.JoinHostPort(dialHost(host), strconv.Itoa(port)),
		HTTP:  &http.Client{Timeout: 10 * time.Second},
		Token: token,
	}
}

// headAnswerLimit bounds what is read from a head server.
const headAnswerLimit = 64 << 20

func (c HeadClient) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+path, nil)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set(server.RunTokenHeader, c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no head server answers at %s (start the servers with `gym env start` and the same config, or set head_server.host/port): %w", c.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, headAnswerLimit))
	if err != nil {
		return nil, fmt.Errorf("reading %s%s: %w", c.URL, path, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, fmt.Errorf("the head server at %s answered %s with %s: from another machine a run's config is served only with the run's token; set %s to the token its servers have in their environment", c.URL, path, resp.Status, server.RunTokenEnv)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the head server at %s answered %s with %s", c.URL, path, resp.Status)
	}
	return body, nil
}

// Config is the whole config the servers were started with:
// /global_config_dict_yaml answers a JSON string whose content is the YAML.
func (c HeadClient) Config(ctx context.Context) (*tree.Node, error) {
	body, err := c.get(ctx, "/global_config_dict_yaml")
	if err != nil {
		return nil, err
	}
	var text string
	if err := json.Unmarshal(body, &text); err != nil {
		return nil, fmt.Errorf("the head server at %s answered /global_config_dict_yaml with something that is not a JSON string: %w", c.URL, err)
	}
	return config.ParseChildConfig(text)
}

// Instances are the servers the head server says it runs.
func (c HeadClient) Instances(ctx context.Context) ([]InstanceInfo, error) {
	body, err := c.get(ctx, "/server_instances")
	if err != nil {
		return nil, err
	}
	var infos []InstanceInfo
	if err := json.Unmarshal(body, &infos); err != nil {
		return nil, fmt.Errorf("the head server at %s sent a malformed instance list: %w", c.URL, err)
	}
	return infos, nil
}
