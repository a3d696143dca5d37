package pyyaml

import (
	"os"
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
