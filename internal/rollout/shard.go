package rollout

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shard is part Index of Count of a run's tasks, so one evaluation can run
// as Count jobs (a Slurm array) whose outputs merge into the whole run. A
// task belongs to the shard its index falls in modulo Count: the repeats of
// a task stay together, which is what the per-task metrics need, and the
// indices are the unsharded run's, so the merged metrics are its metrics.
// The zero Shard is the whole run.
type Shard struct{ Index, Count int }

// ParseShard reads the I/N form of --shard. Its errors leave out the
// value, which the caller names with where it came from.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	index, errI := strconv.Atoi(strings.TrimSpace(i))
	count, errN := strconv.Atoi(strings.TrimSpace(n))
	switch {
	case !ok || errI != nil || errN != nil:
		return Shard{}, errors.New("it must be I/N, shard I of N counted from 0, such as 2/4")
	case count < 1:
		return Shard{}, errors.New("the count must be at least 1")
	case index < 0 || index >= count:
		return Shard{}, fmt.Errorf("the index must be from 0 to %d", count-1)
	}
	return Shard{index, count}, nil
}

func (s Shard) String() string {
	if s.Count == 0 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Keeps reports whether a task is in the shard. A row may bring its own
// negative task index; it goes where Python's modulo puts it.
func (s Shard) Keeps(task int64) bool {
	if s.Count <= 1 {
		return true
	}
	n := int64(s.Count)
	return (task%n+n)%n == int64(s.Index)
}

// checkShard refuses materialized inputs that hold a task outside the
// shard: resuming them would run rollouts another shard owns, and the
// merged run would hold them twice.
func checkShard(materialized string, shard Shard) error {
	return eachRecord(materialized, func(lr *lineReader, row *record) error {
		if task := row.peek(TaskIndexKey).Int(); !shard.Keeps(task) {
			return fmt.Errorf("cannot resume %s as shard %s: it holds task %d, which belongs to another shard (it was materialized with another --shard or none); run without --resume to start this shard afresh", materialized, shard, task)
		}
		return nil
	})
}
