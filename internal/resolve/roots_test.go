package resolve

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestNewRoots(t *testing.T) {
	base := tempDir(t)
	cwd := mkdir(t, base, "work")
	install := mkdir(t, base, "install")
	plugins := mkdir(t, base, "plugins")
	team := mkdir(t, base, "team")
	mkdir(t, cwd, "rel_plugins")
	symlink(t, install, filepath.Join(base, "install_link"))
	symlink(t, cwd, filepath.Join(base, "work_link"))

	tests := []struct {
		name                string
		extra, cwd, install string
		want                []string
	}{
		{"no extra roots", "", cwd, install, []string{cwd, install}},
		{"extra roots first, in order", list(plugins, team), cwd, install, []string{plugins, team, cwd, install}},
		{"empty entries are skipped", list("", plugins, "", team, ""), cwd, install, []string{plugins, team, cwd, install}},
		{"cwd equal to install root is listed once", "", install, install, []string{install}},
		{"cwd reaching the install root through a symlink", "", filepath.Join(base, "install_link"), install,
			[]string{filepath.Join(base, "install_link")}},
		{"an extra root equal to the install root is listed first", install, cwd, install, []string{install, cwd}},
		{"an extra root linking to the install root keeps its own form", filepath.Join(base, "install_link"), cwd, install,
			[]string{filepath.Join(base, "install_link"), cwd}},
		{"an extra root linking to the cwd hides the cwd", filepath.Join(base, "work_link"), cwd, install,
			[]string{filepath.Join(base, "work_link"), install}},
		{"repeated extra roots", list(plugins, plugins+"/", plugins+"/."), cwd, install, []string{plugins, cwd, install}},
		{"relative extra roots stay relative", list("rel_plugins", "./rel_plugins/"), cwd, install,
			[]string{"rel_plugins", cwd, install}},
		{"a relative extra root naming the cwd", ".", cwd, install, []string{".", install}},
		{"extra roots are not ~-expanded", "~/plugins", cwd, install, []string{"~/plugins", cwd, install}},
		{"missing extra roots still count", filepath.Join(base, "absent"), cwd, install,
			[]string{filepath.Join(base, "absent"), cwd, install}},
		{"no install root", "", cwd, "", []string{cwd}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewRoots(tt.extra, tt.cwd, tt.install).List()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("List() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	base := tempDir(t)
	cwd := mkdir(t, base, "work")
	install := mkdir(t, base, "install")
	extra := mkdir(t, base, "extra")
	write(t, install, "my_config.yaml", "my_key: from_parent\n")
	write(t, install, "only_install.yaml", "")
	write(t, cwd, "my_config.yaml", "my_key: from_cwd\n")
	write(t, install, "env.yaml", "custom_env_key: from_parent\n")
	write(t, cwd, "env.yaml", "custom_env_key: from_cwd\n")
	write(t, extra, "env.yaml", "custom_env_key: from_extra\n")
	mkdir(t, install, "data")
	write(t, cwd, "rel_extra/prompt.yaml", "")

	tests := []struct {
		name  string
		extra string
		rel   string
		want  string
	}{
		// T60: the cwd copy beats the install root's.
		{"cwd first", "", "my_config.yaml", filepath.Join(cwd, "my_config.yaml")},
		{"falls back to the install root", "", "only_install.yaml", filepath.Join(install, "only_install.yaml")},
		// T61: an extra root's env.yaml shadows the cwd's.
		{"env.yaml from cwd", "", "env.yaml", filepath.Join(cwd, "env.yaml")},
		{"env.yaml from an extra root", extra, "env.yaml", filepath.Join(extra, "env.yaml")},
		{"directories count", "", "data", filepath.Join(install, "data")},
		{"missing: the first root", extra, "missing/nope.yaml", filepath.Join(extra, "missing/nope.yaml")},
		{"missing without extra roots: the cwd", "", "missing/nope.yaml", filepath.Join(cwd, "missing/nope.yaml")},
		{"absolute paths are unchanged", "", "/definitely/absent//x.yaml", "/definitely/absent//x.yaml"},
		{"~ is not expanded", "", "~/x.yaml", filepath.Join(cwd, "~/x.yaml")},
		{"dot components are tidied, .. is kept", "", "./a/../my_config.yaml", filepath.Join(cwd, "a") + "/../my_config.yaml"},
		{"relative extra roots give relative paths", "rel_extra", "prompt.yaml", "rel_extra/prompt.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewRoots(tt.extra, cwd, install).Resolve(tt.rel); got != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.rel, got, tt.want)
			}
		})
	}
}

func TestResolveFunc(t *testing.T) {
	base := tempDir(t)
	cwd := mkdir(t, base, "work")
	install := mkdir(t, base, "install")
	// The cwd has a same-named directory that is not a server; the install
	// root has the real one.
	mkdir(t, cwd, "resources_servers/mcqa/data")
	write(t, install, "resources_servers/mcqa/requirements.txt", "")
	write(t, install, "resources_servers/gocomp/go.mod", "")
	mkdir(t, cwd, "rel/resources_servers/relsrv")
	write(t, cwd, "rel/resources_servers/relsrv/pyproject.toml", "")

	isServer := func(dir string) bool {
		for _, marker := range []string{"requirements.txt", "pyproject.toml", "go.mod"} {
			if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
				return true
			}
		}
		return false
	}
	r := NewRoots("rel", cwd, install)
	for rel, want := range map[string]string{
		"resources_servers/mcqa":   filepath.Join(install, "resources_servers/mcqa"),
		"resources_servers/gocomp": filepath.Join(install, "resources_servers/gocomp"),
		"resources_servers/relsrv": "rel/resources_servers/relsrv",
		"resources_servers/absent": "rel/resources_servers/absent",
	} {
		if got := r.ResolveFunc(rel, isServer); got != want {
			t.Errorf("ResolveFunc(%q) = %q, want %q", rel, got, want)
		}
	}
	// The validator sees paths anchored at the given cwd even for a relative
	// root, whatever the process's own working directory is.
	var seen []string
	r.ResolveFunc("x", func(p string) bool { seen = append(seen, p); return false })
	want := []string{filepath.Join(cwd, "rel/x"), filepath.Join(cwd, "x"), filepath.Join(install, "x")}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("validator saw %q, want %q", seen, want)
	}
}

func TestNotFoundError(t *testing.T) {
	base := tempDir(t)
	cwd := mkdir(t, base, "work")
	install := mkdir(t, base, "install")
	extra := mkdir(t, base, "extra")
	const tail = "Check the path is spelled correctly and is relative to your working directory, an extra root\n" +
		"(NEMO_GYM_EXTRA_ROOTS / --search-dir), or the Gym install root."

	tests := []struct {
		name       string
		extra, cwd string
		entry      string
		want       string
	}{
		{"T53 cwd differs from the install root", "", cwd, "missing/nope.yaml",
			"config_paths entry 'missing/nope.yaml' was not found. Looked in:\n" +
				"  - " + cwd + "/missing/nope.yaml\n" +
				"  - " + install + "/missing/nope.yaml\n" + tail},
		{"T54 run from the install root", "", install, "missing/nope.yaml",
			"config_paths entry 'missing/nope.yaml' was not found. Looked in:\n" +
				"  - " + install + "/missing/nope.yaml\n" + tail},
		{"T55 absolute entry", "", cwd, "/tmp/x/absent.yaml",
			"config_paths entry '/tmp/x/absent.yaml' was not found. Looked in:\n" +
				"  - /tmp/x/absent.yaml\n" + tail},
		{"extra roots are listed first", extra, cwd, "a.yaml",
			"config_paths entry 'a.yaml' was not found. Looked in:\n" +
				"  - " + extra + "/a.yaml\n" +
				"  - " + cwd + "/a.yaml\n" +
				"  - " + install + "/a.yaml\n" + tail},
		{"the entry is quoted as written", "", install, "./a//b.yaml",
			"config_paths entry './a//b.yaml' was not found. Looked in:\n" +
				"  - " + install + "/a/b.yaml\n" + tail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewRoots(tt.extra, tt.cwd, install).NotFound(tt.entry)
			if got := err.Error(); got != tt.want {
				t.Errorf("Error() =\n%s\nwant\n%s", got, tt.want)
			}
			if !errors.Is(err, fs.ErrNotExist) {
				t.Error("errors.Is(err, fs.ErrNotExist) = false")
			}
			if n := strings.Count(err.Error(), "\n  - "); n != len(err.Looked) {
				t.Errorf("%d '  - ' lines for %d locations", n, len(err.Looked))
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	r := NewRoots(list("/p", "/p/"), "/w", "/i")
	if got, want := r.Candidates("a/b.yaml"), []string{"/p/a/b.yaml", "/w/a/b.yaml", "/i/a/b.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Candidates = %q, want %q", got, want)
	}
	if got, want := r.Candidates("/abs.yaml"), []string{"/abs.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Candidates(abs) = %q, want %q", got, want)
	}
}

func TestWithSearchDirs(t *testing.T) {
	sep := string(os.PathListSeparator)
	tests := []struct {
		name     string
		dirs     []string
		previous string
		want     string
	}{
		{"no previous value", []string{"~/my-plugins"}, "", "~/my-plugins"},
		{"prepended to the previous value", []string{"a", "b"}, "c" + sep + "d", "a" + sep + "b" + sep + "c" + sep + "d"},
		{"placed exactly as given", []string{"./x/", "../y//"}, "", "./x/" + sep + "../y//"},
		{"no search dirs", nil, "c", "c"},
		{"nothing at all", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WithSearchDirs(tt.dirs, tt.previous); got != tt.want {
				t.Errorf("WithSearchDirs(%q, %q) = %q, want %q", tt.dirs, tt.previous, got, tt.want)
			}
		})
	}
	// The value round-trips through NewRoots with the search dirs winning.
	base := tempDir(t)
	a, b, c := mkdir(t, base, "a"), mkdir(t, base, "b"), mkdir(t, base, "c")
	got := NewRoots(WithSearchDirs([]string{a, b}, c), base, "").List()
	if want := []string{a, b, c, base}; !reflect.DeepEqual(got, want) {
		t.Errorf("roots = %q, want %q", got, want)
	}
}

func TestRealPath(t *testing.T) {
	base := tempDir(t)
	real := mkdir(t, base, "real")
	symlink(t, real, filepath.Join(base, "link"))
	write(t, base, "file", "")
	tests := map[string]string{
		filepath.Join(base, "link"):              real,
		filepath.Join(base, "link/absent/x"):     filepath.Join(real, "absent/x"),
		base + "/link/../link/y":                 filepath.Join(real, "y"),
		filepath.Join(base, "file") + "/under/x": filepath.Join(base, "file/under/x"),
		"/":                                      "/",
	}
	for in, want := range tests {
		if got := realPath(in); got != want {
			t.Errorf("realPath(%q) = %q, want %q", in, got, want)
		}
	}
}
