package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nemo-gym-go/gym/internal/table"
)

// Health words are NeMo Gym's.
const (
	healthSuccess         = "success"
	healthConnectionError = "connection_error"
	healthTimeout         = "timeout"
	healthUnknown         = "unknown_error"
)

// Status asks the head server which servers run, and checks each one's
// GET /.
func Status(ctx context.Context, head HeadClient, now time.Time) ([]InstanceInfo, error) {
	infos, err := head.Instances(ctx)
	if err != nil {
		return nil, err
	}
	check := &http.Client{Timeout: 2 * time.Second}
	var wg sync.WaitGroup
	for i := range infos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := &infos[i]
			status := health(ctx, check, in.URL)
			in.Status = &status
			uptime := now.Sub(time.Unix(0, int64(in.StartTime*1e9))).Seconds()
			in.UptimeSeconds = &uptime
		}()
	}
	wg.Wait()
	return infos, nil
}

func health(ctx context.Context, client *http.Client, url string) string {
	if url == "" {
		return healthUnknown
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/", nil)
	if err != nil {
		return healthUnknown
	}
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		return healthSuccess
	}
	if isTimeout(err) {
		return healthTimeout
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return healthConnectionError
	}
	return healthUnknown
}

// WriteStatus prints the instance table and the summary line.
func WriteStatus(w io.Writer, infos []InstanceInfo) {
	healthy := 0
	rows := [][]string{{"", "NAME", "SERVER", "URL", "PID", "UPTIME", "HEALTH"}}
	for _, in := range infos {
		mark := "✗"
		if in.Status != nil && *in.Status == healthSuccess {
			mark = "✓"
			healthy++
		}
		rows = append(rows, []string{mark, in.ProcessName, in.ServerType + "/" + in.Name, in.URL, strconv.Itoa(in.PID), uptime(in.UptimeSeconds), deref(in.Status)})
	}
	table.Write(w, rows)
	fmt.Fprintf(w, "\n%d servers found (%d healthy, %d unhealthy)\n", len(infos), healthy, len(infos)-healthy)
}

func uptime(s *float64) string {
	if s == nil {
		return "-"
	}
	d := time.Duration(*s * float64(time.Second)).Round(100 * time.Millisecond)
	days := int(d.Hours()) / 24
	d -= time.Duration(days) * 24 * time.Hour
	return fmt.Sprintf("%dd %dh %dm %.1fs", days, int(d.Hours()), int(d.Minutes())%60, float64(d%time.Minute)/float64(time.Second))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}
