package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/progress"
)

// dispatch verifies the rollouts still to do, appending each result as it
// completes to the output (successes) or the failures file. A verification
// cut short by cancellation is written nowhere, so --resume does it again:
// every rollout ends up in the output exactly once.
func (p *ReverifyPlan) dispatch(ctx context.Context, paths Paths, st *resumeState, sum *ReverifySummary) error {
	o := p.o
	out, err := openAppender(paths.Output)
	if err != nil {
		return err
	}
	fails, err := openAppender(paths.Failures)
	if err != nil {
		out.Close()
		return err
	}
	v := &verifier{p: p, out: out, fails: fails, sum: sum}
	o.Progress.Start(sum.Selected-sum.Terminal-sum.Maxed, sum.Cached)
	slots := make(chan struct{}, max(o.Concurrency, 1))
	var wg sync.WaitGroup
	walkErr := p.walk(func(_ *lineReader, k key, payload []byte) error {
		if st.standing(k, o.MaxAttempts) != standingToRun {
			return nil
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return errStop
		}
		if v.firstWriteError() != nil {
			<-slots
			return errStop
		}
		v.mu.Lock()
		sum.Dispatched++
		v.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			v.verify(ctx, payload)
		}()
		return nil
	})
	wg.Wait()
	o.Progress.Finish()
	if errors.Is(walkErr, errStop) {
		walkErr = nil
	}
	if err := errors.Join(walkErr, out.Close(), fails.Close(), v.firstWriteError()); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if sum.RequestFailed > 0 {
		return &VerifyFailuresError{Failed: sum.RequestFailed, Dispatched: sum.Dispatched, FailuresPath: paths.Failures}
	}
	return nil
}

type verifier struct {
	p          *ReverifyPlan
	out, fails *appender
	mu         sync.Mutex
	sum        *ReverifySummary
	writeErr   error
}

func (v *verifier) firstWriteError() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.writeErr
}

// reverifyStampKeys are copied from the /verify body onto its result, as
// NeMo Gym's reverification copies them.
var reverifyStampKeys = []string{TaskIndexKey, RolloutIndexKey, AgentRefKey, EnvironmentServerKey, TaskSourceKey, SkillsRefKey}

// verify is one rollout: POST its body to its resources server's /verify,
// stamp the result and route it.
func (v *verifier) verify(ctx context.Context, payload []byte) {
	o := v.p.o
	row := gjson.ParseBytes(payload)
	reply, err := v.post(ctx, row, payload)
	if ctx.Err() != nil {
		return
	}
	var result []byte
	if err == nil {
		result, err = stampResult(reply, row)
	}
	if err != nil {
		line, ferr := failureRow(payload, VerifyRequestFailedClass, err)
		v.record(v.fails, line, ferr, progress.Outcome{Failed: true}, func(s *ReverifySummary) {
			s.RequestFailed++
			s.Failed++
			s.FailureCounts[VerifyRequestFailedClass]++
		})
		return
	}
	res := gjson.ParseBytes(result)
	class := res.Get("_ng_failure_class")
	switch {
	case res.Get("_ng_no_persist").Bool():
		v.record(nil, nil, nil, progress.Outcome{Failed: true}, func(s *ReverifySummary) { s.NotPersisted++; s.FailureCounts["not_persisted"]++ })
	case class.Exists() && class.Type != gjson.Null:
		detail := res.Get("_ng_failure_message").String()
		if detail == "" {
			detail = res.Get("error").String()
		}
		detail, _ = jsonl.Clip(detail)
		fmt.Fprintf(o.Log, "Rollout (%d, %d) of %s dropped from the score: class=%s error=%s\n",
			row.Get(TaskIndexKey).Int(), row.Get(RolloutIndexKey).Int(), row.Get(AgentRefKey+".name").Str, class.String(), detail)
		v.record(v.fails, result, nil, progress.Outcome{Failed: true}, func(s *ReverifySummary) { s.Failed++; s.FailureCounts[class.String()]++ })
	default:
		reward := res.Get("reward")
		v.record(v.out, result, nil, progress.Outcome{Reward: reward.Num, HasReward: reward.Type == gjson.Number}, func(s *ReverifySummary) { s.Succeeded++ })
	}
}

func (v *verifier) post(ctx context.Context, row gjson.Result, payload []byte) ([]byte, error) {
	rs, err := v.p.o.Routes.For(row)
	if err != nil {
		return nil, err
	}
	base, err := v.p.o.ServerURL(ctx, rs)
	if err != nil {
		return nil, err
	}
	reply, _, err := v.p.o.Client.PostJSON(ctx, base+"/verify", payload, nil)
	if err != nil {
		return nil, fmt.Errorf("resources server %s: %w", rs, err)
	}
	return reply, nil
}

func (v *verifier) record(to *appender, line []byte, buildErr error, outcome progress.Outcome, count func(*ReverifySummary)) {
	err := buildErr
	if err == nil && to != nil {
		err = to.writeLine(line)
	}
	v.mu.Lock()
	if err != nil {
		if v.writeErr == nil {
			v.writeErr = err
		}
		v.mu.Unlock()
		return
	}
	count(v.sum)
	v.mu.Unlock()
	v.p.o.Progress.Add(outcome)
}

// stampResult compacts a /verify answer onto one line and copies the
// rollout's identity onto it.
func stampResult(reply []byte, row gjson.Result) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, reply); err != nil || !gjson.ParseBytes(buf.Bytes()).IsObject() {
		return nil, fmt.Errorf("/verify answered %s, not a JSON object", jsonl.Excerpt(reply))
	}
	out := buf.Bytes()
	var err error
	for _, k := range reverifyStampKeys {
		if v := row.Get(k); v.Exists() {
			if out, err = sjson.SetRawBytes(out, k, []byte(v.Raw)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// failureRow is the failures-file row of a rollout whose /verify failed:
// the body as sent, the class and the error.
func failureRow(body []byte, class string, cause error) ([]byte, error) {
	out, err := sjson.SetBytes(body, "_ng_failure_class", class)
	if err != nil {
		return nil, err
	}
	return sjson.SetRawBytes(out, "_ng_failure_error", openai.AppendJSONString(nil, cause.Error()))
}
