package rollout

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/configtest"
)

func TestReadEvalSettings(t *testing.T) {
	base := EvalSettings{Output: "r.jsonl", Split: "benchmark", Repeats: Repeats{All: 1}, Concurrency: DefaultConcurrency,
		ClientSettings: ClientSettings{Timeout: DefaultTimeout, MaxRetries: DefaultMaxRetries}}
	tests := []struct {
		name    string
		noServe bool
		tokens  []string
		want    func(e *EvalSettings)
		wantErr string
		usage   bool
	}{
		{name: "defaults", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=benchmark"}, want: func(*EvalSettings) {}},
		{name: "every key", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=benchmark", "++limit=4", "++num_repeats=3",
			"++num_samples_in_parallel='8'", "++resume_from_cache=true", "++shard='1/4'", "++agent_name=a", "++num_repeats_add_seed=true", "++interleave_repeats=true",
			"++responses_create_params={temperature: 0.5}", "++rollout_timeout_seconds=1.5", "++rollout_max_retries=0", "++prompt_config=p.yaml",
			"++disable_aggregation=true", "++reuse_existing_data_preparation=true", "++fan_out=2"},
			want: func(e *EvalSettings) {
				e.Limit, e.Repeats, e.Concurrency, e.Resume, e.Shard, e.Agent, e.AddSeed = 4, Repeats{All: 3}, 8, true, Shard{Index: 1, Count: 4}, "a", true
				e.InterleaveRepeats = true
				e.Overrides = []byte(`{"temperature":0.5}`)
				e.ClientSettings = ClientSettings{Timeout: 1500 * time.Millisecond, MaxRetries: 0}
				e.PromptConfig, e.DisableAggregation, e.ReuseCollation, e.Ignored = "p.yaml", true, true, []string{"fan_out"}
			}},
		{name: "repeats per agent", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=benchmark", "++num_repeats={a: 4, _default: null}"},
			want: func(e *EvalSettings) { e.Repeats = Repeats{PerAgent: map[string]int{"a": 4, "_default": 1}} }},
		{name: "no-serve needs an input, not a split", noServe: true, tokens: []string{"++output_jsonl_fpath=r.jsonl", "++input_jsonl_fpath=in.jsonl"},
			want: func(e *EvalSettings) { e.Split, e.Input = "", "in.jsonl" }},
		{name: "every missing key named", tokens: nil, wantErr: "missing required configuration: output_jsonl_fpath, split.", usage: true},
		{name: "no-serve's missing input", noServe: true, tokens: []string{"++output_jsonl_fpath=r.jsonl"}, wantErr: "missing required configuration: input_jsonl_fpath.", usage: true},
		{name: "a bad shard is a usage error", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++shard='3/2'"}, wantErr: `shard (--shard) is "3/2": the index must be from 0 to 1`, usage: true},
		{name: "a negative limit", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++limit=-1"}, wantErr: "limit must not be negative, got -1"},
		{name: "no rollouts in flight", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++num_samples_in_parallel=0"}, wantErr: "num_samples_in_parallel must be at least 1"},
		{name: "a word for a number", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++limit=some"}, wantErr: `limit must be an integer, got "some"`},
		{name: "zero repeats", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++num_repeats=0"}, wantErr: "num_repeats must be at least 1, got 0"},
		{name: "a bad repeat of one agent", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++num_repeats={a: x}"}, wantErr: `num_repeats.a must be an integer of at least 1, got "x"`},
		{name: "a negative timeout", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++rollout_timeout_seconds=-1"}, wantErr: "must not be negative"},
		{name: "a Python driver", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++rollout_collection_driver=my.fn"}, wantErr: "names a Python collection function"},
		{name: "skills", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++skills=[x]"}, wantErr: "does not support agent skills"},
		{name: "parameters that are not a map", tokens: []string{"++output_jsonl_fpath=r.jsonl", "++split=b", "++responses_create_params=3"}, wantErr: "responses_create_params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadEvalSettings(configtest.Settings(t, tt.tokens...), tt.noServe)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				var missing *config.MissingSettingsError
				var bad *config.BadSettingError
				if usage := errors.As(err, &missing) || errors.As(err, &bad); usage != tt.usage {
					t.Errorf("usage error = %v, want %v", usage, tt.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := base
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}
