package resources

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// scipy.stats.t.ppf(0.975, df), printed by scipy 1.x in nemo-gym 0.7.0's
// environment.
func TestStudentTQuantileIsScipys(t *testing.T) {
	for _, tt := range []struct {
		df   float64
		want float64
	}{
		{1, 12.706204736174694}, {2, 4.302652729749462}, {3, 3.1824463052837078}, {4, 2.7764451051977934},
		{7, 2.364624251592784}, {31, 2.039513446396408}, {100, 1.9839715185235518}, {1000, 1.9623390808264083},
	} {
		if got := studentTQuantile(0.975, tt.df); math.Abs(got-tt.want) > 1e-12*tt.want {
			t.Errorf("df %v: %.17g, scipy %.17g", tt.df, got, tt.want)
		}
	}
}

func TestRepeatLevelMetrics(t *testing.T) {
	agg, _ := mustAggregate(t, rows(
		`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"z":1}`,
		`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0}`,
		`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":1.0}`,
		`{"_ng_task_index":1,"_ng_rollout_index":1,"reward":1.0}`,
		`{"_ng_task_index":0,"_ng_rollout_index":2,"reward":0.0}`,
	), MetricsHooks{})
	got, _ := json.Marshal(agg.RepeatLevelMetrics)
	// Columns sorted by name (reward before z); the third repeat lacks
	// task 1 and has one value, so no std to speak of and no interval.
	for _, want := range []string{
		`[{"_ng_rollout_index":0,"sample_count":2,"missing_count":0,"mean/reward":0.5,"median/reward":0.5,"std/reward":0.7071067811865476,"sem/reward":0.5,"min/reward":0.0,"max/reward":1.0,"p25/reward":0.25,"p75/reward":0.75,"ci_low_95/reward":-5.85310236808733`,
		`"mean/z":1.0,"median/z":1.0,"std/z":0.0,"sem/z":0.0,"min/z":1.0,"max/z":1.0,"p25/z":1.0,"p75/z":1.0}`,
		`{"_ng_rollout_index":1,"sample_count":2,"missing_count":0,"mean/reward":1.0,"median/reward":1.0,"std/reward":0.0,"sem/reward":0.0,"min/reward":1.0,"max/reward":1.0,"p25/reward":1.0,"p75/reward":1.0,"ci_low_95/reward":1.0,"ci_high_95/reward":1.0}`,
		`{"_ng_rollout_index":2,"sample_count":1,"missing_count":1,"mean/reward":0.0,"median/reward":0.0,"std/reward":0.0,"sem/reward":0.0,"min/reward":0.0,"max/reward":0.0,"p25/reward":0.0,"p75/reward":0.0}]`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("repeat-level metrics\n%s\nlack\n%s", got, want)
		}
	}
	// nemo-gym 0.7.0's compute_aggregate_metrics on the same rows: across
	// the three repeats' mean/reward (0.5, 1, 0), then mean/z, which only
	// the first has; num_repeats last. The intervals agree with scipy's to
	// about 1e-15, not to the last bit.
	want := `{"mean/reward": 0.6, "mean/z": 1.0, "max/reward": 1.0, "max/z": 1.0, "min/reward": 0.0, "min/z": 1.0, "median/reward": 1.0, "median/z": 1.0, "std/reward": 0.5477225575051662, ` +
		`"mean_across_repeats/mean/reward": 0.5, "median_across_repeats/mean/reward": 0.5, "std_across_repeats/mean/reward": 0.5, "min_across_repeats/mean/reward": 0.0, "max_across_repeats/mean/reward": 1.0, "se_across_repeats/mean/reward": 0.2886751345948129, ` +
		`"ci_low_95_across_repeats/mean/reward": -0.7420688558751651, "ci_high_95_across_repeats/mean/reward": 1.7420688558751651, ` +
		`"mean_across_repeats/mean/z": 1.0, "median_across_repeats/mean/z": 1.0, "std_across_repeats/mean/z": 0.0, "min_across_repeats/mean/z": 1.0, "max_across_repeats/mean/z": 1.0, "se_across_repeats/mean/z": 0.0, "num_repeats": 3}`
	sameMetrics(t, agg.AgentMetrics, want)
	key, _ := agg.KeyMetrics.MarshalJSON()
	if strings.Contains(string(key), "across_repeats") || strings.Contains(string(key), "num_repeats") {
		t.Errorf("key metrics %s: only mean/* belong there", key)
	}
}

func TestPrimaryMetric(t *testing.T) {
	for name, want := range map[string]bool{
		"mean/reward": true, "pass@1": true, "pass@1[avg-of-4]/accuracy": true, "accuracy": true,
		"max/reward": false, "std/reward": false, "sem/reward": false, "se/x": false, "p25/reward": false,
		"ci_low_95/reward": false, "histogram/reward": false, "reward/p95": false, "x/ci_low_95": false,
		"x/ci_upper": false, "acc_ci95_upper": false, "pass@4/std_dev_across_runs": false, "pass@4/std_err_across_runs": false,
		"mean_across_repeats/mean/reward": false, "ci_low_95_across_repeats/mean/reward": false,
		"num_repeats": false, "sample_count": false, "_ng_task_index": false, "_ng_rollout_index": false, "x/_ng_attempt_index": false,
	} {
		if got := PrimaryMetric(name); got != want {
			t.Errorf("PrimaryMetric(%q) = %v, want %v", name, got, want)
		}
	}
}

// sameMetrics compares m with a JSON object NeMo Gym wrote: the same keys in
// the same order, the same values, confidence bounds within 1e-12.
func sameMetrics(t *testing.T, m *Metrics, want string) {
	t.Helper()
	got, _ := m.MarshalJSON()
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	keys := m.Keys()
	dec := json.NewDecoder(strings.NewReader(want))
	dec.Token()
	var wantKeys []string
	for dec.More() {
		k, _ := dec.Token()
		wantKeys = append(wantKeys, k.(string))
		var skip any
		dec.Decode(&skip)
	}
	if strings.Join(keys, " ") != strings.Join(wantKeys, " ") {
		t.Errorf("keys\n%v\nwant\n%v", keys, wantKeys)
	}
	for k, wv := range w {
		gf, gok := g[k].(float64)
		wf, wok := wv.(float64)
		tol := 0.0
		if strings.HasPrefix(k, "ci_") {
			tol = 1e-12 * math.Max(1, math.Abs(wf))
		}
		if !gok || !wok || math.Abs(gf-wf) > tol {
			t.Errorf("%s = %v, NeMo Gym %v", k, g[k], wv)
		}
	}
}
