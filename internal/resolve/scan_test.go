package resolve

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestScan(t *testing.T) {
	base := tempDir(t)
	plugins := mkdir(t, base, "plugins")
	cwd := mkdir(t, base, "work")
	install := mkdir(t, base, "install")
	for _, name := range []string{"zeta", "math_with_judge", "mcqa"} {
		mkdir(t, install, "resources_servers/"+name)
	}
	mkdir(t, install, "resources_servers/.git")
	write(t, install, "resources_servers/README.md", "")
	mkdir(t, cwd, "resources_servers/mcqa")
	mkdir(t, cwd, "resources_servers/my_server")
	mkdir(t, plugins, "resources_servers/mcqa")
	mkdir(t, plugins, "resources_servers/alpha")
	outside := mkdir(t, base, "elsewhere/linked")
	symlink(t, outside, filepath.Join(plugins, "resources_servers/linked"))
	symlink(t, filepath.Join(base, "absent"), filepath.Join(plugins, "resources_servers/dangling"))

	got := NewRoots(list(plugins, "relative_absent"), cwd, install).Scan("resources_servers")
	want := []Found{
		{Name: "alpha", Dir: filepath.Join(plugins, "resources_servers/alpha"), Root: plugins},
		{Name: "linked", Dir: filepath.Join(plugins, "resources_servers/linked"), Root: plugins},
		{Name: "mcqa", Dir: filepath.Join(plugins, "resources_servers/mcqa"), Root: plugins, Shadowed: []string{
			filepath.Join(cwd, "resources_servers/mcqa"),
			filepath.Join(install, "resources_servers/mcqa"),
		}},
		{Name: "my_server", Dir: filepath.Join(cwd, "resources_servers/my_server"), Root: cwd},
		{Name: "math_with_judge", Dir: filepath.Join(install, "resources_servers/math_with_judge"), Root: install},
		{Name: "zeta", Dir: filepath.Join(install, "resources_servers/zeta"), Root: install},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Scan =\n%+v\nwant\n%+v", got, want)
	}

	if got := NewRoots("", cwd, cwd).Scan("benchmarks"); got != nil {
		t.Errorf("Scan of a missing type dir = %+v, want nil", got)
	}
}

func TestScanRelativeRoot(t *testing.T) {
	cwd := tempDir(t)
	mkdir(t, cwd, "plugins/benchmarks/mine")
	got := NewRoots("plugins", cwd, "").Scan("benchmarks")
	want := []Found{{Name: "mine", Dir: "plugins/benchmarks/mine", Root: "plugins"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Scan = %+v, want %+v", got, want)
	}
}
