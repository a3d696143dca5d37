package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// resolveFile loads body as `gym env resolve` does (load, merge,
// overrides, directives, defaults, resolution, masking), returning the
// unresolved config children receive and the resolved one it prints.
func resolveFile(env Env, path string, body []byte, overrides ...string) (unresolved, resolved *tree.Node, err error) {
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return nil, nil, err
	}
	req := Request{Overrides: append([]string{"+config_paths=[" + path + "]"}, overrides...)}
	res, err := Load(context.Background(), env, req)
	if err != nil {
		return nil, nil, err
	}
	out, err := res.Resolved(true)
	return res.Config, out, err
}

// render is the output of `gym env resolve --show-origin` and the config
// every child process receives.
func render(unresolved, resolved *tree.Node) {
	Dump(unresolved)
	pyyaml.Dump(resolved, pyyaml.Options{LeafComment: func(n *tree.Node) string { return n.Origin.String() }})
}

// deepShape is a config whose nesting grows with depth, given as a YAML
// file and the overrides that go with it.
type deepShape struct {
	name  string
	build func(depth int) (body string, overrides []string)
}

var deepShapes = []deepShape{
	{"flow-list", func(d int) (string, []string) {
		return "a: " + strings.Repeat("[", d) + strings.Repeat("]", d) + "\n", nil
	}},
	{"flow-map", func(d int) (string, []string) {
		return "a: " + strings.Repeat("{a: ", d) + "1" + strings.Repeat("}", d) + "\n", nil
	}},
	// Block sequences nest on one line, so the text stays linear in depth.
	{"block-list", func(d int) (string, []string) {
		return "a:\n" + strings.Repeat("- ", d) + "x\n", nil
	}},
	{"block-map", func(d int) (string, []string) {
		var b strings.Builder
		for i := range d {
			b.WriteString(strings.Repeat(" ", i) + "a:\n")
		}
		b.WriteString(strings.Repeat(" ", d) + "x\n")
		return b.String(), nil
	}},
	// Each value refers to the one before, so resolving the last follows
	// the whole chain.
	{"interp-chain", func(d int) (string, []string) {
		var b strings.Builder
		b.WriteString("k0: 1\n")
		for i := 1; i <= d; i++ {
			fmt.Fprintf(&b, "k%d: ${k%d}\n", i, i-1)
		}
		return b.String(), nil
	}},
	{"interp-chain-map", func(d int) (string, []string) {
		var b strings.Builder
		b.WriteString("k0: {x: 1}\n")
		for i := 1; i <= d; i++ {
			fmt.Fprintf(&b, "k%d: ${k%d}\n", i, i-1)
		}
		return b.String(), nil
	}},
	{"interp-nested", func(d int) (string, []string) {
		return "a: '" + strings.Repeat("${oc.select:x,", d) + "1" + strings.Repeat("}", d) + "'\n", nil
	}},
	{"override-list", func(d int) (string, []string) {
		return "a: 1\n", []string{"+b=" + strings.Repeat("[", d) + strings.Repeat("]", d)}
	}},
	{"override-key", func(d int) (string, []string) {
		return "a: 1\n", []string{"+" + strings.TrimSuffix(strings.Repeat("b.", d), ".") + "=1"}
	}},
	{"override-interp", func(d int) (string, []string) {
		return "a: 1\n", []string{"+b='" + strings.Repeat("${oc.select:x,", d) + "1" + strings.Repeat("}", d) + "'"}
	}},
}

var deepDepths = []int{100, 1000, 10000}

// BenchmarkDeepConfig runs the whole pipeline on configs nested 100, 1,000
// and 10,000 levels deep; past maxNesting it measures the refusal.
func BenchmarkDeepConfig(b *testing.B) {
	for _, s := range deepShapes {
		for _, d := range deepDepths {
			body, overrides := s.build(d)
			b.Run(fmt.Sprintf("%s/%d", s.name, d), func(b *testing.B) {
				env := testEnv(b, nil)
				path := filepath.Join(env.Cwd, "deep.yaml")
				b.ReportAllocs()
				for b.Loop() {
					if unresolved, resolved, err := resolveFile(env, path, []byte(body), overrides...); err == nil {
						render(unresolved, resolved)
					}
				}
			})
		}
	}
}

// TestDeepConfigRefused checks that every way of nesting a config one
// level past tree.MaxDepth fails with a config error naming the limit, and
// that tree.MaxDepth levels resolve.
func TestDeepConfigRefused(t *testing.T) {
	const max = tree.MaxDepth
	maps := func(key string, n int, inner string) string {
		return strings.Repeat("{"+key+": ", n) + inner + strings.Repeat("}", n)
	}
	tests := []struct {
		name      string
		build     func(levels int) (string, []string)
		class     Class
		where     string // in the message, besides the limit
		resolving bool   // fails only once resolved for output
	}{
		{name: "file", build: func(d int) (string, []string) {
			return "a: " + strings.Repeat("[", d-1) + strings.Repeat("]", d-1) + "\n", nil
		}, class: ClassConfig, where: "deep.yaml' at line 1"},
		{name: "override", build: func(d int) (string, []string) {
			return "a: 1\n", []string{"+b=" + strings.Repeat("[", d-1) + strings.Repeat("]", d-1)}
		}, class: ClassOverride, where: "+b=[["},
		{name: "interpolation chain", build: func(d int) (string, []string) {
			var b strings.Builder
			b.WriteString("k0: 1\n")
			for i := 1; i <= d; i++ {
				fmt.Fprintf(&b, "k%d: ${k%d}\n", i, i-1)
			}
			return b.String(), nil
		}, class: ClassInterpolation, where: "deep.yaml:"},
		{name: "nested interpolation", build: func(d int) (string, []string) {
			return "a: '" + strings.Repeat("${oc.select:x,", d) + "1" + strings.Repeat("}", d) + "'\n", nil
		}, class: ClassInterpolation, where: "deep.yaml:1"},
		// Directives and interpolations place one subtree inside another.
		{name: "inherit", build: func(d int) (string, []string) {
			return "a: " + maps("a", 299, "{_inherit_from: b}") + "\nb: " + maps("b", d-300, "1") + "\n", nil
		}, class: ClassConfig, where: "deep.yaml:2"},
		{name: "interpolated map", build: func(d int) (string, []string) {
			return "a: " + maps("a", 299, "'${b}'") + "\nb: " + maps("b", d-300, "1") + "\n", nil
		}, class: ClassInterpolation, where: "deep.yaml:1", resolving: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t, nil)
			path := filepath.Join(env.Cwd, "deep.yaml")
			body, overrides := tt.build(max)
			if _, _, err := resolveFile(env, path, []byte(body), overrides...); err != nil {
				t.Fatalf("%d levels: %v", max, err)
			}
			body, overrides = tt.build(max + 1)
			unresolved, _, err := resolveFile(env, path, []byte(body), overrides...)
			cfgErr, ok := errors.AsType[*Error](err)
			if !ok || cfgErr.Class != tt.class || !strings.Contains(err.Error(), tree.DepthProblem()) || !strings.Contains(err.Error(), tt.where) {
				t.Fatalf("%d levels: got %v, want a %s naming %q and the limit", max+1, err, tt.class, tt.where)
			}
			if loaded := unresolved != nil; loaded != tt.resolving {
				t.Errorf("loading failed: %v, want %v", !loaded, !tt.resolving)
			}
		})
	}
}

// allocated is the number of bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDeepConfigLinear checks that memory grows linearly with nesting: at
// twice the depth, loading and resolving may allocate about twice as much,
// not four times. (Printing is left out: block-style YAML indents each
// level further, so its text grows with the square of the depth, as
// PyYAML's does.)
func TestDeepConfigLinear(t *testing.T) {
	for _, s := range deepShapes {
		t.Run(s.name, func(t *testing.T) {
			env := testEnv(t, nil)
			path := filepath.Join(env.Cwd, "deep.yaml")
			cost := func(depth int) uint64 {
				body, overrides := s.build(depth)
				return allocated(func() {
					if _, _, err := resolveFile(env, path, []byte(body), overrides...); err != nil {
						t.Fatalf("depth %d: %v", depth, err)
					}
				})
			}
			cost(10) // warm caches that a first load fills
			small, large := cost(tree.MaxDepth/4), cost(tree.MaxDepth/2)
			if ratio := float64(large) / float64(small); ratio > 2.5 {
				t.Errorf("depth %d allocates %d bytes, depth %d %d: %.1f times as much", tree.MaxDepth/4, small, tree.MaxDepth/2, large, ratio)
			}
		})
	}
}
