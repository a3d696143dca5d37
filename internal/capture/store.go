// Package capture is model-call capture (observability) as NeMo Gym
// defines it: model servers append one record per call of a rollout to
// <model_call_capture_dir>/<rollout id>.capture.jsonl (Middleware), and the
// collector joins each rollout's records into its row as
// ng_model_call_capture and ng_trajectory (Join). The files are NeMo
// Gym's, byte for byte, so a Python model server and a Go collector (or
// the other way round) share one capture directory.
package capture

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

const (
	captureSuffix    = ".capture.jsonl"
	incompleteSuffix = ".capture.incomplete"
)

// Store is one capture directory.
type Store struct{ dir string }

// Open makes the capture directory if it is missing.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("model_call_capture_dir %s: %w", dir, err)
	}
	return &Store{dir: dir}, nil
}

// Dir is the capture directory.
func (s *Store) Dir() string { return s.dir }

// ValidKey is NeMo Gym's rule for a key that names capture files:
// letters, digits, '.', '_' and '-'.
func ValidKey(key string) error {
	if key == "" {
		return fmt.Errorf("invalid rollout id %q", key)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("invalid rollout id %q", key)
		}
	}
	return nil
}

func (s *Store) path(key, suffix string) string { return filepath.Join(s.dir, key+suffix) }

// appendRecord adds one record, a line ending in its newline, to key's
// file, under an exclusive lock, in one write: several servers append to
// one file, and a record the collector may read must be whole. Unlike NeMo
// Gym, gym does not sync each record to disk: the record is visible to
// every reader as soon as it is written, and the copy that must survive a
// crash is the rollout's row, which holds the joined capture and which the
// collector syncs (every second). A sync per call cost more than the rest
// of the capture together (bench/rollouts.sh with CAPTURE=1).
func (s *Store) appendRecord(key string, line []byte) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	return appendLine(s.path(key, captureSuffix), line)
}

// MarkIncomplete records that a call of key could not be captured.
func (s *Store) MarkIncomplete(key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	f, err := os.OpenFile(s.path(key, incompleteSuffix), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// Clear removes key's files: a rollout about to run starts with no
// records of an earlier run.
func (s *Store) Clear(key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	var errs []error
	for _, suffix := range []string{captureSuffix, incompleteSuffix} {
		if err := os.Remove(s.path(key, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// has reports whether key has a capture file or an incomplete marker.
func (s *Store) has(key string) bool {
	for _, suffix := range []string{captureSuffix, incompleteSuffix} {
		if _, err := os.Stat(s.path(key, suffix)); err == nil {
			return true
		}
	}
	return false
}

func (s *Store) incomplete(key string) bool {
	_, err := os.Stat(s.path(key, incompleteSuffix))
	return err == nil
}

// line is one non-blank line of a capture file, with its place among the
// non-blank lines.
type line struct {
	index int
	text  []byte
}

// lines reads key's file under a shared lock: its non-blank lines.
func (s *Store) lines(key string) ([]line, error) {
	f, err := os.Open(s.path(key, captureSuffix))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []line
	err = withLock(f, false, func() error {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<30)
		n := 0
		for sc.Scan() {
			text := bytes.TrimSpace(sc.Bytes())
			if len(text) == 0 {
				continue
			}
			out = append(out, line{index: n, text: bytes.Clone(text)})
			n++
		}
		return sc.Err()
	})
	return out, err
}
