package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/server"
)

// The test binary doubles as gym, and registers a minimal Go server so that
// `gym env start` can run Go servers before the real components exist. It
// answers POST /echo with its instance name, and exits with code 3 after
// crash_after_ms when that is set.
func init() {
	server.Register("resources_servers/test_minimal", "TestMinimal", func(rt *server.Runtime) (http.Handler, error) {
		if v := rt.Config.Get("crash_after_ms"); v != nil && v.Kind == tree.Int {
			time.AfterFunc(time.Duration(v.Int)*time.Millisecond, func() {
				os.Stdout.WriteString("test_minimal crashing on purpose\n")
				os.Exit(3)
			})
		}
		mux := http.NewServeMux()
		mux.HandleFunc("POST /echo", func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(strconv.Quote(rt.Instance)))
		})
		return mux, nil
	})
	// test_reverify is a resources server built on gym's base whose
	// reverify_mode is its config's, whose /verify gives reward 1 when the
	// answer is the row's expected one, and hangs forever with hang_verify.
	server.Register("resources_servers/test_reverify", "TestReverify", func(rt *server.Runtime) (http.Handler, error) {
		section := resources.Config{Instance: rt.Instance, Node: rt.Config}
		mode, err := section.Enum("reverify_mode", []string{"stateless", "unsupported", "unknown"})
		if err != nil {
			return nil, err
		}
		hang, err := section.Bool("hang_verify", false)
		if err != nil {
			return nil, err
		}
		return resources.NewHandler(rt, resources.Options{
			ReverifyMode: resources.ReverifyMode(mode),
			Fields:       []resources.FieldSpec{{Name: "expected", Kind: resources.String, Required: true}},
			Verify: func(ctx context.Context, req *resources.VerifyRequest) (*resources.Verdict, error) {
				if hang {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				reward := 0.0
				if req.OutputText() == req.String("expected") {
					reward = 1
				}
				return &resources.Verdict{Reward: reward, Fields: req.Echo("expected")}, nil
			},
		})
	})
}

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"gym":              main,
		"ng":               main,
		"ng_dump_config":   main,
		"nemo_gym_version": main,
		"ng_reinstall":     main,
		"ng_dum_config":    main,
	})
}

// TestScripts runs the CLI behaviour tests in testdata/script. Each script
// runs in its own $WORK directory with an empty install root unless it sets
// GYM_INSTALL_ROOT itself.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// lines FILE N: FILE has exactly N lines, each ending in a newline.
			"lines": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: lines FILE N")
				}
				data := ts.ReadFile(args[0])
				n := strings.Count(data, "\n")
				whole := data == "" || strings.HasSuffix(data, "\n")
				ok := whole && strconv.Itoa(n) == args[1]
				if ok == neg {
					ts.Fatalf("%s has %d lines (ends in a newline: %v), want %s", args[0], n, whole, args[1])
				}
			},
			// fakehub [-token T] REPO CONFIG SPLIT ROWS.json: a local
			// Hugging Face Hub serving the rows (a JSON list) as the parquet
			// conversion of REPO's CONFIG/SPLIT; HF_ENDPOINT points at it.
			"fakehub": func(ts *testscript.TestScript, neg bool, args []string) {
				token := ""
				if len(args) > 1 && args[0] == "-token" {
					token, args = args[1], args[2:]
				}
				if neg || len(args) != 4 {
					ts.Fatalf("usage: fakehub [-token T] REPO CONFIG SPLIT ROWS.json")
				}
				data, err := hubtest.ParquetFromJSON([]byte(ts.ReadFile(args[3])))
				ts.Check(err)
				hub := hubtest.New()
				hub.Token = token
				hub.AddParquet(args[0], args[1], args[2], data)
				ts.Defer(hub.Close)
				ts.Setenv("HF_ENDPOINT", hub.Hub.URL)
			},
			"hub":    hubCmd,
			"gitlab": gitlabCmd,
			// waitsize GLOB N: a file GLOB matches holds N bytes or more, within 10 s.
			"waitsize": waitSize,
		},
		Setup: func(env *testscript.Env) error {
			install := env.WorkDir + "/.install"
			if err := os.MkdirAll(install, 0o755); err != nil {
				return err
			}
			env.Setenv("GYM_INSTALL_ROOT", install)
			env.Setenv("NEMO_GYM_EXTRA_ROOTS", "")
			env.Setenv("HOME", env.WorkDir+"/.home")
			env.Setenv("NO_COLOR", "1")
			port, err := freePort()
			if err != nil {
				return err
			}
			env.Setenv("HEADPORT", strconv.Itoa(port))
			if port, err = freePort(); err != nil {
				return err
			}
			env.Setenv("UPSTREAMPORT", strconv.Itoa(port))
			// The repository is the install root of scripts that need
			// the real built-in components.
			repo, err := filepath.Abs("../..")
			if err != nil {
				return err
			}
			env.Setenv("GYM_REPO_ROOT", repo)
			// GYMBIN alone on PATH is a machine without Python or uv.
			gymBin, _, _ := strings.Cut(env.Getenv("PATH"), string(os.PathListSeparator))
			env.Setenv("GYMBIN", gymBin)
			// Scripts that build Go share this process's build and module
			// caches (HOME is the script's own), so they compile once and
			// find modules offline.
			for _, kv := range goCaches() {
				env.Setenv(kv[0], kv[1])
			}
			return hideUV(env)
		},
	})
}

// hideUV takes uv off the scripts' PATH: a directory holding one is
// replaced by $WORK/.bin, which links to everything else in it, so a script
// sees uv only when it puts its own (a fake that logs what gym runs) on PATH.
func hideUV(env *testscript.Env) error {
	bin := filepath.Join(env.WorkDir, ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	var path []string
	hidden := false
	for _, dir := range filepath.SplitList(env.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, "uv")); err != nil {
			path = append(path, dir)
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name() != "uv" {
				os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(bin, e.Name()))
			}
		}
		if !hidden {
			path = append(path, bin)
			hidden = true
		}
	}
	env.Setenv("PATH", strings.Join(path, string(os.PathListSeparator)))
	return nil
}

var goCaches = sync.OnceValue(func() [][2]string {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil
	}
	return [][2]string{{"GOCACHE", lines[0]}, {"GOMODCACHE", lines[1]}}
})

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
