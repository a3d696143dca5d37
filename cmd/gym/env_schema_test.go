package main

import (
	"reflect"
	"testing"
)

func TestEnvSchemaFlags(t *testing.T) {
	runFlagCases(t, []flagCase[schemaOptions]{
		{name: "a resources server", args: []string{"--resources-server", "mcqa", "--search-dir", "a", "--search-dir", "b"},
			check: func(t *testing.T, o *schemaOptions) {
				if c, err := o.component(); c != "resources_servers/mcqa" || err != nil || !reflect.DeepEqual(o.searchDirs, []string{"a", "b"}) {
					t.Errorf("%q %v %+v", c, err, o)
				}
			}},
		{name: "NeMo Gym's entrypoint key wins", args: []string{"--resources-server", "mcqa", "++entrypoint=responses_api_agents/x"},
			check: func(t *testing.T, o *schemaOptions) {
				if c, err := o.component(); c != "responses_api_agents/x" || err != nil {
					t.Errorf("%q %v", c, err)
				}
			}},
		{name: "an unknown flag", args: []string{"--resource-server", "x"}, wantErr: "unrecognized arguments: --resource-server", usage: true},
	}, newCmdEnvSchema)
}
