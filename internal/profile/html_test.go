package profile

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rolloutsWithCapture writes rollouts of three tasks, their model calls
// captured.
func rolloutsWithCapture(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for task := range 3 {
		for r := range 4 {
			reward := float64((task + r) % 2)
			fmt.Fprintf(&b, `{"reward":%v,"_ng_task_index":%d,"_ng_rollout_index":%d,"ng_model_call_capture":{"calls":[{"tokens_in":%d,"tokens_out":%d,"latency_total_ms":%v},{"tokens_in":null,"tokens_out":null,"latency_total_ms":1.5}]}}`+"\n",
				reward, task, r, 100+task*10+r, 20+r, 10.5+float64(task*r))
		}
	}
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportHoldsItsFigures(t *testing.T) {
	var page bytes.Buffer
	if err := WriteHTML(&page, rolloutsWithCapture(t)); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{"<td>Rollouts</td><td>12</td>", "<td>Tasks</td><td>3</td>", "<td>Model calls</td><td>24</td>", "<td>Mean reward</td><td>0.5000</td>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if n := strings.Count(html, "<svg "); n != 4 {
		t.Errorf("%d charts, want 4", n)
	}
	for _, external := range []string{"<script", "src=", "href=", "@import"} {
		if strings.Contains(html, external) {
			t.Errorf("the page is not self-contained: it holds %s", external)
		}
	}
}

// The page as a browser shows it: headless Chromium (Debian's chromium)
// renders it, and each of the four charts is on the screenshot in its own
// color.
func TestReportRendersInChromium(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no chromium on PATH (.ci/run installs Debian's chromium)")
	}
	dir := t.TempDir()
	pagePath := filepath.Join(dir, "report.html")
	var page bytes.Buffer
	if err := WriteHTML(&page, rolloutsWithCapture(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pagePath, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--window-size=900,1600", "--screenshot="+shot, "file://"+pagePath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[[3]uint8]int{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			counts[[3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}]++
		}
	}
	for i, hex := range ChartColors {
		c := [3]uint8{}
		for j := range 3 {
			v, _ := strconv.ParseUint(hex[1+2*j:3+2*j], 16, 8)
			c[j] = uint8(v)
		}
		if counts[c] < 2000 {
			t.Errorf("chart %d (%s) covers %d pixels of the screenshot; it did not render", i+1, hex, counts[c])
		}
	}
}

// Rewards JSON can hold but no bin can (an overflowing 1e999 reads as
// infinity), and a range no float width spans, are left out, not a panic.
func TestReportOfExtremeValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(path, []byte(`{"reward":1e999,"_ng_task_index":0,"_ng_rollout_index":0}
{"reward":-1.7e308,"_ng_task_index":1,"_ng_rollout_index":0}
{"reward":1.7e308,"_ng_task_index":2,"_ng_rollout_index":0}
`+strings.Repeat(`{"reward":0.5,"_ng_task_index":3,"_ng_rollout_index":0}
`, 13)), 0o644)
	var page bytes.Buffer
	if err := WriteHTML(&page, path); err != nil {
		t.Fatal(err)
	}
}
