package resolve

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

func components() fstest.MapFS {
	return fstest.MapFS{
		"benchmarks/gsm8k/config.yaml":             {Data: []byte("gsm8k: {}\n")},
		"benchmarks/gsm8k/data/example.jsonl":      {Data: []byte("{}\n")},
		"resources_servers/mcqa/configs/mcqa.yaml": {Data: []byte("mcqa: {}\n")},
		"resources_servers/mcqa/run.sh":            {Data: []byte("#!/bin/sh\n"), Mode: 0o755},
		"environments":                             {Mode: fs.ModeDir | 0o755},
	}
}

func TestMaterialize(t *testing.T) {
	cache := filepath.Join(tempDir(t), "cache", "gym")
	src := components()
	dir, err := Materialize(src, cache)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != cache || !strings.HasPrefix(filepath.Base(dir), "builtin-") {
		t.Fatalf("dir = %q, want %s/builtin-<hash>", dir, cache)
	}
	for name, f := range src {
		p := filepath.Join(dir, filepath.FromSlash(name))
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if f.Mode.IsDir() {
			if !fi.IsDir() || fi.Mode().Perm() != 0o755 {
				t.Errorf("%s: mode %v, want a 0755 directory", name, fi.Mode())
			}
			continue
		}
		data, _ := os.ReadFile(p)
		if string(data) != string(f.Data) {
			t.Errorf("%s = %q, want %q", name, data, f.Data)
		}
		want := fs.FileMode(0o644)
		if f.Mode&0o111 != 0 {
			want = 0o755
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "benchmarks")); fi.Mode().Perm() != 0o755 {
		t.Errorf("benchmarks: mode %v, want 0755", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o755 {
		t.Errorf("tree root: mode %v, want 0755", fi.Mode().Perm())
	}

	// A second run reuses the directory without writing it again.
	marker := write(t, dir, "local-marker", "kept")
	again, err := Materialize(components(), cache)
	if err != nil || again != dir {
		t.Fatalf("second Materialize = %q, %v; want %q", again, err, dir)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the existing tree was rewritten: %v", err)
	}

	// Changed content, a renamed file or a new executable bit is a new tree.
	for name, change := range map[string]func(fstest.MapFS){
		"content": func(m fstest.MapFS) { m["benchmarks/gsm8k/config.yaml"] = &fstest.MapFile{Data: []byte("changed\n")} },
		"name": func(m fstest.MapFS) {
			m["benchmarks/gsm8k/config2.yaml"] = m["benchmarks/gsm8k/config.yaml"]
			delete(m, "benchmarks/gsm8k/config.yaml")
		},
		"mode": func(m fstest.MapFS) { m["benchmarks/gsm8k/config.yaml"].Mode = 0o755 },
	} {
		m := components()
		change(m)
		other, err := Materialize(m, cache)
		if err != nil {
			t.Fatal(err)
		}
		if other == dir {
			t.Errorf("a different %s gave the same directory %s", name, dir)
		}
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 4 {
		t.Errorf("cache holds %d entries, want 4 trees and no staging leftovers", len(entries))
	}
}

func TestMaterializeConcurrent(t *testing.T) {
	cache := filepath.Join(tempDir(t), "cache")
	const n = 16
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			dirs[i], errs[i] = Materialize(components(), cache)
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if dirs[i] != dirs[0] {
			t.Fatalf("caller %d got %q, caller 0 got %q", i, dirs[i], dirs[0])
		}
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("cache holds %q, want one tree and no staging leftovers", names)
	}
	if data, err := os.ReadFile(filepath.Join(dirs[0], "resources_servers/mcqa/configs/mcqa.yaml")); err != nil || string(data) != "mcqa: {}\n" {
		t.Errorf("materialized file = %q, %v", data, err)
	}
}

// TestMaterializeProcesses races separate processes, as two gym commands
// started together on a fresh machine do.
func TestMaterializeProcesses(t *testing.T) {
	if cache := os.Getenv("GYM_TEST_MATERIALIZE_CACHE"); cache != "" {
		dir, err := Materialize(components(), cache)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Print("DIR=" + dir + "\n")
		return
	}
	cache := filepath.Join(tempDir(t), "cache")
	const n = 6
	cmds := make([]*exec.Cmd, n)
	outs := make([]*strings.Builder, n)
	for i := range n {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestMaterializeProcesses$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), "GYM_TEST_MATERIALIZE_CACHE="+cache)
		outs[i] = &strings.Builder{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	dirs := map[string]bool{}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
		for _, line := range strings.Split(outs[i].String(), "\n") {
			if d, ok := strings.CutPrefix(line, "DIR="); ok {
				dirs[d] = true
			}
		}
	}
	entries, _ := os.ReadDir(cache)
	if len(dirs) != 1 || len(entries) != 1 {
		t.Errorf("processes reported %v; cache holds %d entries; want one tree", dirs, len(entries))
	}
}

func TestMaterializeErrors(t *testing.T) {
	base := tempDir(t)
	blocker := write(t, base, "not-a-dir", "")
	_, err := Materialize(components(), filepath.Join(blocker, "cache"))
	if err == nil || !strings.Contains(err.Error(), blocker) {
		t.Errorf("err = %v, want one naming %s", err, blocker)
	}
	bad := unreadable{components(), "benchmarks/gsm8k/config.yaml"}
	if _, err := Materialize(bad, filepath.Join(base, "cache")); err == nil || !strings.Contains(err.Error(), bad.fail) {
		t.Errorf("err = %v, want one naming %s", err, bad.fail)
	}
}

// unreadable is a tree with one file that cannot be opened.
type unreadable struct {
	m    fstest.MapFS
	fail string
}

func (u unreadable) Open(name string) (fs.File, error) {
	if name == u.fail {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return u.m.Open(name)
}

func TestDefaultCacheDir(t *testing.T) {
	home := tempDir(t)
	fallback := filepath.Join(os.TempDir(), fmt.Sprintf("gym-%d", os.Getuid()))
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"XDG_CACHE_HOME wins", map[string]string{"XDG_CACHE_HOME": "/xdg", "HOME": home}, "/xdg/gym"},
		{"relative XDG_CACHE_HOME is ignored", map[string]string{"XDG_CACHE_HOME": "rel", "HOME": home}, filepath.Join(home, ".cache/gym")},
		{"HOME", map[string]string{"HOME": home}, filepath.Join(home, ".cache/gym")},
		{"no HOME", map[string]string{}, fallback},
		{"HOME that does not exist", map[string]string{"HOME": "/nonexistent/home"}, fallback},
		{"relative HOME", map[string]string{"HOME": "."}, fallback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultCacheDir(func(k string) string { return tt.env[k] }); got != tt.want {
				t.Errorf("DefaultCacheDir = %q, want %q", got, tt.want)
			}
		})
	}
}
