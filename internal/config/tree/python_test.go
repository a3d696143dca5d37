package tree

import (
	"math"
	"testing"
)

func TestPythonFloatRepr(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{1, "1.0"},
		{1.5, "1.5"},
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{100, "100.0"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{1e-6, "1e-06"},
		{1.5e-7, "1.5e-07"},
		{1e15, "1000000000000000.0"},
		{1e16, "1e+16"},
		{1.25e22, "1.25e+22"},
		{1e100, "1e+100"},
		{0.1, "0.1"},
		{123.456, "123.456"},
		{-2.5, "-2.5"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
	}
	for _, tt := range tests {
		if got := PythonFloatRepr(tt.in); got != tt.want {
			t.Errorf("PythonFloatRepr(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
