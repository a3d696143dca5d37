// Package examplesingletoolcall is NeMo Gym's example_single_tool_call
// resources server in Go: one get_weather tool that always reports cold
// weather, and a verifier that rewards a rollout that called it. It exists to
// show the moving parts of a tool-using environment end to end, and is
// written with the public gymserver package, as a server outside gym's
// module would be.
package examplesingletoolcall

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/gymserver"
)

// Kind and ClassName as NeMo Gym names them, so the session cookie is
// `SimpleWeatherResourcesServer___<instance>` as with the Python server.
const (
	Kind      = "resources_servers/example_single_tool_call"
	ClassName = "SimpleWeatherResourcesServer"
)

// Server is the resources server. Its reverify mode is left unknown, as
// NeMo Gym 0.7.0's server declares none.
var Server = gymserver.ResourcesServer{
	ClassName: ClassName,
	Verify:    verify,
	Tools:     []gymserver.Tool{{Name: "get_weather", Call: getWeather}},
}

// It reads no config key of its own; expose_tools_over_mcp, which the
// resources base reads only to refuse true, keeps NeMo Gym's server under
// builtin_servers: prefer.
func init() { gymserver.Register(Kind, ClassName, Server.Handler) }

var weatherArgs = []gymserver.Field{{Name: "city", Type: gymserver.String, Required: true}}

type weather struct {
	City               string `json:"city"`
	WeatherDescription string `json:"weather_description"`
}

func getWeather(_ *http.Request, args json.RawMessage) (any, error) {
	f, err := gymserver.ValidateFields(args, weatherArgs)
	if err != nil {
		return nil, err
	}
	var city string
	json.Unmarshal(f["city"], &city)
	return weather{City: city, WeatherDescription: "The weather in " + city + " is cold."}, nil
}

// verify rewards a rollout whose answer called get_weather, as nemo-gym
// 0.7.0's server does. The reply is BaseVerifyResponse, the request's two
// objects plus reward.
func verify(_ context.Context, req *gymserver.VerifyRequest) (*gymserver.Verdict, error) {
	called := false
	gjson.GetBytes(req.Response, "output").ForEach(func(_, item gjson.Result) bool {
		called = item.Get("type").Str == "function_call" && item.Get("name").Str == "get_weather"
		return !called
	})
	if called {
		return &gymserver.Verdict{Reward: 1.0}, nil
	}
	return &gymserver.Verdict{Reward: 0.0}, nil
}
