package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// The pipeline's budget for one input of up to maxFuzzInput bytes, in CPU
// time and bytes allocated. They are generous on purpose: a real config
// takes milliseconds and a few MiB, and what they catch is cost that grows
// out of proportion with the input (quadratic walks, exponential
// expansion), which blows through any fixed budget once the input is large
// enough. An input still running after fuzzHangLimit crashes the worker,
// so that the fuzzer keeps it even if it would never end.
const (
	maxFuzzInput  = 64 << 10
	fuzzTimeLimit = time.Second
	fuzzMemLimit  = 256 << 20
	fuzzHangLimit = 30 * time.Second
)

// FuzzPipelineBudget runs a config file and command-line overrides through
// everything `gym env resolve --show-origin` does (loading, merging,
// overrides, directives, validation, defaults, resolution, masking,
// printing) and fails when one input takes more than fuzzTimeLimit of CPU
// or allocates more than fuzzMemLimit, besides panicking or failing with
// anything but a config Error. Overrides are one per line.
func FuzzPipelineBudget(f *testing.F) {
	seedNames := map[[2]string]string{}
	for _, s := range budgetSeeds() {
		f.Add(s.body, s.overrides)
		seedNames[[2]string{s.body, s.overrides}] = s.name
	}
	env := testEnv(f, nil)
	path := filepath.Join(env.Cwd, "f.yaml")
	f.Fuzz(func(t *testing.T, body, overrides string) {
		if len(body)+len(overrides) > maxFuzzInput {
			return
		}
		var tokens []string
		if overrides != "" {
			tokens = strings.Split(overrides, "\n")
		}
		input := fmt.Sprintf("%d-byte input", len(body)+len(overrides))
		if name, ok := seedNames[[2]string{body, overrides}]; ok {
			input = "seed " + strconv.Quote(name)
		}
		hung := time.AfterFunc(fuzzHangLimit, func() {
			panic(fmt.Sprintf("%s is still running after %v", input, fuzzHangLimit))
		})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := cpuTime()
		unresolved, resolved, err := resolveFile(env, path, []byte(body), tokens...)
		if err == nil {
			render(unresolved, resolved)
		}
		took := cpuTime() - start
		runtime.ReadMemStats(&after)
		hung.Stop()
		if _, ok := errors.AsType[*Error](err); err != nil && !ok {
			t.Fatalf("%s: error is not a config Error: %T %v", input, err, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; !raceEnabled && alloc > fuzzMemLimit {
			t.Fatalf("%s allocated %d MiB, over the %d MiB budget", input, alloc>>20, fuzzMemLimit>>20)
		}
		if !raceEnabled && took > fuzzTimeLimit {
			t.Fatalf("%s took %v of CPU, over the %v budget", input, took, fuzzTimeLimit)
		}
	})
}

type budgetSeed struct{ name, body, overrides string }

// budgetSeeds are inputs near the budget's edge: deep nesting every way
// a config can nest, expansion through aliases, merge keys and
// interpolations, and sheer size.
func budgetSeeds() []budgetSeed {
	var seeds []budgetSeed
	add := func(name, body, overrides string) {
		if len(body)+len(overrides) <= maxFuzzInput {
			seeds = append(seeds, budgetSeed{name, body, overrides})
		}
	}
	for _, s := range deepShapes {
		for _, d := range []int{100, tree.MaxDepth, tree.MaxDepth + 1, 10000} {
			body, overrides := s.build(d)
			add(fmt.Sprintf("%s/%d", s.name, d), body, strings.Join(overrides, "\n"))
		}
	}
	// Deep nesting, many times over.
	deepList := strings.Repeat("[", tree.MaxDepth-1) + strings.Repeat("]", tree.MaxDepth-1)
	add("many deep lists", "a: ["+strings.Repeat(deepList+", ", 60)+"1]\n", "")
	deepMap := strings.Repeat("{a: ", tree.MaxDepth-2) + "1" + strings.Repeat("}", tree.MaxDepth-2)
	add("many deep maps", "a: ["+strings.Repeat(deepMap+", ", 25)+"1]\n", "")
	add("deep anchor, many aliases", "a: &a "+deepMap+"\nb: ["+strings.Repeat("*a, ", 10000)+"1]\n", "")
	add("deep interpolated map, many references", "a: "+deepMap+"\nb: ["+strings.Repeat("'${a}', ", 5000)+"1]\n", "")
	add("many interpolations deep down", "x: 1\na: "+strings.Repeat("[", tree.MaxDepth-2)+strings.Repeat("'${x}', ", 8000)+"1"+strings.Repeat("]", tree.MaxDepth-2)+"\n", "")
	add("many relative interpolations deep down", "a: "+strings.Repeat("{a: ", tree.MaxDepth-3)+"{x: 1, l: ["+strings.Repeat("'${..x}', ", 6000)+"1]}"+strings.Repeat("}", tree.MaxDepth-3)+"\n", "")
	add("inherit doubling depth", "a: "+strings.Repeat("{a: ", 400)+"{_inherit_from: b}"+strings.Repeat("}", 400)+"\nb: "+strings.Repeat("{b: ", 400)+"1"+strings.Repeat("}", 400)+"\n", "")

	// Billion laughs: through aliases, merge keys and interpolations.
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s*a%d]\n", i, i, strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), i-1)
	}
	add("alias laughs", b.String(), "")
	b.Reset()
	b.WriteString("m0: &m0 {a: 1, b: 2}\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "m%d: &m%d {<<: [*m%d, *m%d], k%d: 1}\n", i, i, i-1, i-1, i)
	}
	add("merge laughs", b.String(), "")
	// As much expansion as the loader allows, carried through the rest of
	// the pipeline.
	for _, n := range []int{100, 1000, 10000} {
		anchor := "a: &a [" + strings.Repeat("1, ", n-1) + "1]\n"
		for _, aliases := range []int{1, 10, 50, 100, 1000} {
			add(fmt.Sprintf("%d aliases of %d items", aliases, n), anchor+"b: ["+strings.Repeat("*a, ", aliases-1)+"*a]\n", "")
		}
	}
	b.Reset()
	b.WriteString("i0: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "i%d: [%s'${i%d}']\n", i, strings.Repeat(fmt.Sprintf("'${i%d}', ", i-1), 9), i-1)
	}
	add("interpolation laughs", b.String(), "")
	b.Reset()
	b.WriteString("s0: " + strings.Repeat("x", 64) + "\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "s%d: '${s%d}${s%d}'\n", i, i-1, i-1)
	}
	add("string laughs", b.String(), "")
	// Evaluated while defaults are filled, when nothing can be cached.
	b.Reset()
	b.WriteString("e0: ''\nsrv: {responses_api_models: {m: {entrypoint: app.py, x: '${e40}'}}}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "e%d: '${e%d}${e%d}'\n", i, i-1, i-1)
	}
	add("server field laughs", b.String(), "")
	b.Reset()
	b.WriteString("k0: 1\n")
	for i := 1; i < 500; i++ {
		fmt.Fprintf(&b, "k%d: ${k%d}\n", i, i-1)
	}
	for i := range 900 {
		fmt.Fprintf(&b, "s%d: {responses_api_models: {m: {entrypoint: a, x: '${k499}'}}}\n", i)
	}
	add("servers reading a long chain", b.String(), "")

	// Size: long scalars, many keys, many items.
	add("long plain scalar", "a: "+strings.Repeat("word ", 12000)+"\n", "")
	add("long quoted scalar", "a: \""+strings.Repeat(`\t\u00e9x\\`, 5000)+"\"\n", "")
	add("long key", strings.Repeat("k", 60000)+": 1\n", "")
	add("long block scalar with tabs", "a: |\n"+strings.Repeat("  x\ty\n", 8000), "")
	b.Reset()
	b.WriteString("t: \"\t\"\n")
	for i := range 4000 {
		fmt.Fprintf(&b, "b%d: |\n  x\ty\n", i)
	}
	add("many block scalars with tabs", b.String(), "")
	add("long interpolated string", "x: y\na: '"+strings.Repeat("${x}", 12000)+"'\n", "")
	b.Reset()
	for i := range 5000 {
		fmt.Fprintf(&b, "k%d: %d\n", i, i)
	}
	add("many keys", b.String(), "")
	add("many items", "a: ["+strings.Repeat("1,", 30000)+"1]\n", "")
	b.Reset()
	b.WriteString("a: {")
	var keys []string
	for i := range 3000 {
		fmt.Fprintf(&b, "k%d: 1, ", i)
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	b.WriteString("_delete_key: '" + strings.Join(keys, ",") + "'}\n")
	add("many deleted keys", b.String(), "")
	b.Reset()
	b.WriteString("a: '${oc.create:{")
	for i := range 5000 {
		fmt.Fprintf(&b, "k%d: %d, ", i, i)
	}
	b.WriteString("z: 0}}'\n")
	add("big interpolated dict", b.String(), "")
	// Re-parsed at every reference while defaults are filled, when
	// nothing can be cached.
	b.Reset()
	b.WriteString("x: '${oc.create:\"[" + strings.Repeat("1, ", 10000) + "1]\"}'\nsrv: {responses_api_models: {m: {entrypoint: a")
	for i := range 2000 {
		fmt.Fprintf(&b, ", f%d: '${x}'", i)
	}
	b.WriteString("}}}\n")
	add("server fields reparsing", b.String(), "")
	b.Reset()
	b.WriteString("x: '${oc.create:\"{a: &a [" + strings.Repeat("1, ", 200) + "1], b: [" + strings.Repeat("*a, ", 200) + "*a]}\"}'\nsrv: {responses_api_models: {m: {entrypoint: a")
	for i := range 2000 {
		fmt.Fprintf(&b, ", f%d: '${x}'", i)
	}
	b.WriteString("}}}\n")
	add("server fields expanding aliases", b.String(), "")
	b.Reset()
	for i := range 1200 {
		fmt.Fprintf(&b, "s%d: {responses_api_models: {m: {entrypoint: a, port: %d}}}\n", i, 20000+i)
	}
	add("many servers", b.String(), "")
	b.Reset()
	for i := range 3000 {
		fmt.Fprintf(&b, "+o%d=[%d]\n", i, i)
	}
	add("many overrides", "a: 1\n", strings.TrimSuffix(b.String(), "\n"))
	add("long override", "a: 1\n", "+b="+strings.Repeat("x", 60000))
	add("deep override dict", "a: 1\n", "+b="+strings.Repeat("{a:", tree.MaxDepth-1)+"1"+strings.Repeat("}", tree.MaxDepth-1))
	return seeds
}
