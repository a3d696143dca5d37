package main

import "testing"

// The collector runs on one thread unless the user set GOMAXPROCS to a
// number, which then holds for the whole run.
func TestCollectProcessors(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{}, 1},
		{map[string]string{"GOMAXPROCS": "4"}, 0},
		{map[string]string{"GOMAXPROCS": ""}, 1},
		{map[string]string{"GOMAXPROCS": "0"}, 1},
		{map[string]string{"GOMAXPROCS": "two"}, 1},
		{map[string]string{"GOMAXPROCS": "4294967296"}, 1}, // past the runtime's int32
		{map[string]string{"GOGC": "400"}, 1},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		if got := collectProcessors(lookup); got != tc.want {
			t.Errorf("env %v: collectProcessors %d, want %d", tc.env, got, tc.want)
		}
	}
}
