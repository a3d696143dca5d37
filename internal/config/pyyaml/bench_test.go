package pyyaml

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func BenchmarkLoad(b *testing.B) {
	data, err := os.ReadFile("testdata/bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Load(data, "bench.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDump(b *testing.B) {
	data, err := os.ReadFile("testdata/bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	n, err := Load(data, "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		Dump(n, Options{})
	}
}

// deepYAML is a document nested depth levels deep in each style a config
// can nest: flow sequences, flow mappings, block sequences (which nest on
// one line) and block mappings.
var deepYAML = []struct {
	name  string
	build func(depth int) string
}{
	{"flow-list", func(d int) string { return "a: " + strings.Repeat("[", d) + strings.Repeat("]", d) + "\n" }},
	{"flow-map", func(d int) string { return "a: " + strings.Repeat("{a: ", d) + "1" + strings.Repeat("}", d) + "\n" }},
	{"block-list", func(d int) string { return "a:\n" + strings.Repeat("- ", d) + "x\n" }},
	{"block-map", func(d int) string {
		var b strings.Builder
		for i := range d {
			b.WriteString(strings.Repeat(" ", i) + "a:\n")
		}
		return b.String() + strings.Repeat(" ", d) + "x\n"
	}},
}

// BenchmarkLoadDeep loads documents nested 100, 1,000 and 10,000 levels
// deep; past MaxNesting it measures the refusal.
func BenchmarkLoadDeep(b *testing.B) {
	for _, s := range deepYAML {
		for _, d := range []int{100, 1000, 10000} {
			data := []byte(s.build(d))
			b.Run(fmt.Sprintf("%s/%d", s.name, d), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Load(data, "deep.yaml")
				}
			})
		}
	}
}
