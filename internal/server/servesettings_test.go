package server

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config"
)

func TestServeSettings(t *testing.T) {
	const echo = "echo_server: {test_servers: {echo: {host: 127.0.0.1, port: 0}}}\n"
	for _, tc := range []struct {
		name          string
		dict          string
		env           map[string]string
		wantOn        bool
		wantDir       string
		wantAccessLog bool
		wantErr       []string // Serve's, in a dry run
	}{
		{name: "off when absent", dict: echo},
		{name: "off when false, whatever the directory", dict: "profiling_enabled: false\nprofiling_results_dirpath: p\n" + echo},
		{name: "on", dict: "profiling_enabled: true\nprofiling_results_dirpath: results/profiles\n" + echo, wantOn: true, wantDir: "results/profiles"},
		{name: "pydantic's yes", dict: "profiling_enabled: 'yes'\nprofiling_results_dirpath: p\n" + echo, wantOn: true, wantDir: "p"},
		{name: "an absolute directory", dict: "profiling_enabled: 1\nprofiling_results_dirpath: /tmp/p\n" + echo, wantOn: true, wantDir: "/tmp/p"},
		{name: "an empty directory is the server's own", dict: "profiling_enabled: true\nprofiling_results_dirpath: ''\n" + echo, wantOn: true},
		{
			name:    "resolved in the server's environment",
			dict:    "profiling_enabled: ${oc.env:PROF}\nprofiling_results_dirpath: ${oc.env:PROF_DIR}\n" + echo,
			env:     map[string]string{"PROF": "on", "PROF_DIR": "d"},
			wantOn:  true,
			wantDir: "d",
		},
		{name: "no directory", dict: "profiling_enabled: true\n" + echo, wantErr: []string{"profiling_enabled is true but profiling_results_dirpath is not set"}},
		{name: "a null directory", dict: "profiling_enabled: true\nprofiling_results_dirpath: null\n" + echo, wantErr: []string{"profiling_results_dirpath is not set"}},
		{name: "null", dict: "profiling_enabled: null\n" + echo, wantErr: []string{"profiling_enabled: Input should be a valid boolean"}},
		{name: "not a bool", dict: "profiling_enabled: maybe\n" + echo, wantErr: []string{"profiling_enabled: Input should be a valid boolean", `"maybe"`}},
		{name: "not a string", dict: "profiling_enabled: true\nprofiling_results_dirpath: 5\n" + echo, wantErr: []string{"profiling_results_dirpath: Input should be a valid string", "5"}},
		// NeMo Gym validates both keys whatever profiling_enabled says.
		{name: "not a string, profiling off", dict: "profiling_results_dirpath: 5\n" + echo, wantErr: []string{"profiling_results_dirpath: Input should be a valid string"}},
		{name: "an unset variable, profiling off", dict: "profiling_results_dirpath: ${oc.env:NOPE}\n" + echo, wantErr: []string{"NOPE"}},
		{name: "an unset variable", dict: "profiling_enabled: ${oc.env:NOPE}\n" + echo, wantErr: []string{"NOPE"}},
		{name: "the access log", dict: "uvicorn_logging_show_200_ok: true\n" + echo, wantAccessLog: true},
		{name: "the access log off", dict: "uvicorn_logging_show_200_ok: 'off'\n" + echo},
		{name: "the access log null", dict: "uvicorn_logging_show_200_ok: null\n" + echo, wantErr: []string{"uvicorn_logging_show_200_ok: Input should be a valid boolean"}},
		{name: "the access log not a bool", dict: "uvicorn_logging_show_200_ok: [1]\n" + echo, wantErr: []string{"uvicorn_logging_show_200_ok: Input should be a valid boolean"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{config.ConfigDictEnv: tc.dict, config.ConfigPathEnv: "echo_server"}
			for k, v := range tc.env {
				env[k] = v
			}
			// A handler built in process profiles nothing: the settings
			// are Serve's to refuse.
			rt, err := fromEnv(envMap(env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			rt.DryRun = true
			err = Serve(context.Background(), rt, echoHandler(nil), io.Discard)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("a dry run passed; settings %+v", rt.serving)
				}
				for _, want := range append(tc.wantErr, "test_servers/echo 'echo_server': ") {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("a dry run = %v", err)
			}
			if rt.serving.profiling != tc.wantOn || rt.serving.profileDir != tc.wantDir || (rt.serving.accessLog == io.Discard) != tc.wantAccessLog {
				t.Errorf("settings = %+v, want profiling %v under %q, access log %v", rt.serving, tc.wantOn, tc.wantDir, tc.wantAccessLog)
			}
		})
	}
}
