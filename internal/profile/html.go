package profile

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
)

// ChartColors are the bar colors of the report's charts, one per chart, in
// page order: a reader (and the test that renders the page) tells them
// apart by them.
var ChartColors = [4]string{"#4c78a8", "#f58518", "#54a24b", "#b279a2"}

// report is what the HTML page shows.
type report struct {
	Title                         string
	Rollouts, Tasks, Calls        int
	MeanReward                    float64
	TokensIn, TokensOut           int64
	HasCapture                    bool
	Rewards, PassRates            template.HTML
	TokensPerCall, LatencyPerCall template.HTML
}

// WriteHTML writes one self-contained page about a run's rollouts: the
// reward distribution, the pass rate of each task (its mean reward), and,
// from a model-call capture (ng_model_call_capture), tokens and latency per
// call. The charts are inline SVG: the page needs no network and no
// script.
func WriteHTML(w io.Writer, rolloutsPath string) error {
	f, err := os.Open(rolloutsPath)
	if err != nil {
		return err
	}
	defer f.Close()
	var rewards, tokens, latency []float64
	byTask := map[int64][]float64{}
	rep := report{Title: rolloutsPath}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if !jsonl.Valid(sc.Bytes()) {
			return &Error{Msg: fmt.Sprintf("%s line %d: not JSON", rolloutsPath, line)}
		}
		r := gjson.ParseBytes(sc.Bytes())
		rep.Rollouts++
		if reward := r.Get("reward"); reward.Type == gjson.Number {
			rewards = append(rewards, reward.Num)
			byTask[r.Get("_ng_task_index").Int()] = append(byTask[r.Get("_ng_task_index").Int()], reward.Num)
		}
		for _, call := range r.Get("ng_model_call_capture.calls").Array() {
			rep.HasCapture = true
			rep.Calls++
			in, out := call.Get("tokens_in"), call.Get("tokens_out")
			rep.TokensIn += in.Int()
			rep.TokensOut += out.Int()
			if in.Type == gjson.Number || out.Type == gjson.Number {
				tokens = append(tokens, in.Num+out.Num)
			}
			if l := call.Get("latency_total_ms"); l.Type == gjson.Number {
				latency = append(latency, l.Num)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s line %d: %w", rolloutsPath, line+1, err)
	}
	rep.Tasks = len(byTask)
	if len(rewards) > 0 {
		rep.MeanReward = mean(rewards)
	}
	tasks := make([]int64, 0, len(byTask))
	for t := range byTask {
		tasks = append(tasks, t)
	}
	slices.Sort(tasks)
	var labels []string
	var rates []float64
	for _, t := range tasks {
		labels = append(labels, fmt.Sprint(t))
		rates = append(rates, mean(byTask[t]))
	}
	rep.Rewards = histogram(rewards, "reward", "rollouts", ChartColors[0])
	rep.PassRates = bars(labels, rates, "task", "mean reward", ChartColors[1])
	rep.TokensPerCall = histogram(tokens, "tokens (in + out)", "calls", ChartColors[2])
	rep.LatencyPerCall = histogram(latency, "latency (ms)", "calls", ChartColors[3])
	return page.Execute(w, rep)
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

const (
	chartW, chartH = 640, 240
	padL, padB     = 56, 40
)

// histogram is an SVG histogram of v in up to 20 bins (one per distinct
// value when there are few).
func histogram(all []float64, xLabel, yLabel, color string) template.HTML {
	var v []float64
	for _, x := range all {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return template.HTML(`<p class="none">No data.</p>`)
	}
	lo, hi := slices.Min(v), slices.Max(v)
	distinct := map[float64]bool{}
	for _, x := range v {
		distinct[x] = true
	}
	var labels []string
	var counts []float64
	if width := (hi - lo) / 20; len(distinct) <= 12 || width == 0 || math.IsInf(width, 0) {
		keys := make([]float64, 0, len(distinct))
		for k := range distinct {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			n := 0
			for _, x := range v {
				if x == k {
					n++
				}
			}
			labels = append(labels, trimFloat(k))
			counts = append(counts, float64(n))
		}
	} else {
		const bins = 20
		width := (hi - lo) / bins
		counts = make([]float64, bins)
		for _, x := range v {
			i := int((x - lo) / width)
			counts[max(min(i, bins-1), 0)]++
		}
		for i := range bins {
			labels = append(labels, trimFloat(lo+float64(i)*width))
		}
	}
	return bars(labels, counts, xLabel, yLabel, color)
}

// bars is an SVG bar chart.
func bars(labels []string, values []float64, xLabel, yLabel, color string) template.HTML {
	if len(values) == 0 {
		return template.HTML(`<p class="none">No data.</p>`)
	}
	top := slices.Max(values)
	if top <= 0 {
		top = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img">`, chartW, chartH)
	plotW, plotH := float64(chartW-padL-10), float64(chartH-padB-10)
	bw := plotW / float64(len(values))
	for i, v := range values {
		h := plotH * v / top
		x := float64(padL) + float64(i)*bw
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`,
			x+bw*0.1, 10+plotH-h, math.Max(bw*0.8, 1), h, color, template.HTMLEscapeString(labels[i]), trimFloat(v))
		if len(values) <= 24 || i%(len(values)/12+1) == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%s</text>`, x+bw/2, 10+plotH+14, template.HTMLEscapeString(labels[i]))
		}
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333"/>`, padL, 10+plotH, chartW-10, 10+plotH)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="10" text-anchor="end">%s</text>`, padL-6, trimFloat(top))
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="10" text-anchor="end">0</text>`, padL-6, 10+plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle">%s</text>`, padL+int(plotW)/2, chartH-6, template.HTMLEscapeString(xLabel))
	fmt.Fprintf(&b, `<text x="12" y="%d" font-size="11" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`, 10+int(plotH)/2, 10+int(plotH)/2, template.HTMLEscapeString(yLabel))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func trimFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%.0f", f)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>gym eval profile: {{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.05em; margin-top: 1.8em; }
table { border-collapse: collapse; } td { padding: 2px 12px 2px 0; }
.none { color: #888; }
</style></head><body>
<h1>{{.Title}}</h1>
<table>
<tr><td>Rollouts</td><td>{{.Rollouts}}</td></tr>
<tr><td>Tasks</td><td>{{.Tasks}}</td></tr>
<tr><td>Mean reward</td><td>{{printf "%.4f" .MeanReward}}</td></tr>
{{if .HasCapture}}<tr><td>Model calls</td><td>{{.Calls}}</td></tr>
<tr><td>Tokens in / out</td><td>{{.TokensIn}} / {{.TokensOut}}</td></tr>{{end}}
</table>
<h2>Reward distribution</h2>
{{.Rewards}}
<h2>Pass rate per task (mean reward)</h2>
{{.PassRates}}
<h2>Tokens per model call</h2>
{{if .HasCapture}}{{.TokensPerCall}}{{else}}<p class="none">No model-call capture in these rollouts (run with observability_enabled).</p>{{end}}
<h2>Latency per model call</h2>
{{if .HasCapture}}{{.LatencyPerCall}}{{else}}<p class="none">No model-call capture in these rollouts.</p>{{end}}
</body></html>
`))
