package capture

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// TokenStore is NeMo Gym's training-token capture store
// (token_id_capture.TokenCaptureStore): per rollout, in one directory,
// <id>.tokens.jsonl (one entry per model call, sorted keys),
// <id>.tokens.intents (the calls dispatched), <id>.tokens.incomplete (the
// calls lost), <id>.tokens.state.json (the index and the freeze) and
// <id>.tokens.lock, which every change holds. Python and Go writers share
// the files.
type TokenStore struct{ dir string }

// OpenTokens makes the directory if it is missing.
func OpenTokens(dir string) (*TokenStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("token_id_capture.dir %s: %w", dir, err)
	}
	return &TokenStore{dir: dir}, nil
}

func (s *TokenStore) path(key, suffix string) string { return filepath.Join(s.dir, key+suffix) }

// tokenState is <id>.tokens.state.json, its fields in the sorted order
// NeMo Gym writes them.
type tokenState struct {
	EntryDigests map[string]string `json:"entry_digests"`
	Frozen       bool              `json:"frozen"`
	Incomplete   bool              `json:"incomplete"`
	IndexedSize  int64             `json:"indexed_size"`
	Retired      bool              `json:"retired"`
	SnapshotID   string            `json:"snapshot_id"`
	Version      int64             `json:"version"`
}

// locked runs fn holding key's lock, exclusive or shared.
func (s *TokenStore) locked(key string, shared bool, fn func() error) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	f, err := os.OpenFile(s.path(key, ".tokens.lock"), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	return withLock(f, !shared, fn)
}

func (s *TokenStore) readState(key string) (*tokenState, error) {
	raw, err := os.ReadFile(s.path(key, ".tokens.state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return &tokenState{EntryDigests: map[string]string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var st tokenState
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("invalid token-capture state for rollout %s: %w", key, err)
	}
	if st.EntryDigests == nil {
		st.EntryDigests = map[string]string{}
	}
	return &st, nil
}

// writeState replaces the state file through a temporary file, synced
// when durable: lifecycle flags cannot be rebuilt from the entries.
func (s *TokenStore) writeState(key string, st *tokenState, durable bool) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".tokens-state-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), s.path(key, ".tokens.state.json")); err != nil {
		return err
	}
	if durable {
		return syncDir(s.dir)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// syncIndex indexes entries written after the state was (a writer that
// stopped between its entry and its state), dropping a torn last line.
func (s *TokenStore) syncIndex(key string, st *tokenState) (bool, error) {
	path := s.path(key, ".tokens.jsonl")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	size := int64(len(data))
	if st.IndexedSize < 0 || st.IndexedSize > size {
		return false, fmt.Errorf("invalid token-capture index offset for rollout %s", key)
	}
	if st.IndexedSize == size {
		return false, nil
	}
	tail := data[st.IndexedSize:]
	recovered := int64(0)
	for pos := 0; pos < len(tail); {
		end := bytes.IndexByte(tail[pos:], '\n')
		next := len(tail)
		if end < 0 {
			end = len(tail)
		} else {
			end += pos
			next = end + 1
		}
		payload := bytes.TrimSpace(tail[pos:end])
		if len(payload) > 0 {
			var e struct {
				ModelCallID string `json:"model_call_id"`
			}
			if err := json.Unmarshal(payload, &e); err != nil {
				if len(bytes.TrimSpace(tail[next:])) > 0 {
					return false, fmt.Errorf("corrupt token-capture entry in %s: %w", path, err)
				}
				if err := os.Truncate(path, st.IndexedSize+int64(pos)); err != nil {
					return false, err
				}
				size = st.IndexedSize + int64(pos)
				break
			}
			digest := sha256Hex(payload)
			if old, ok := st.EntryDigests[e.ModelCallID]; ok && old != digest {
				st.Incomplete = true
				st.Version++
				return false, errors.Join(fmt.Errorf("model call id %q has conflicting durable payloads for rollout %q", e.ModelCallID, key), s.writeState(key, st, true))
			}
			st.EntryDigests[e.ModelCallID] = digest
			recovered++
		}
		pos = next
	}
	st.IndexedSize = size
	st.Version += recovered
	return true, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// errFrozen and errRetired are a capture that the collector has taken: a
// call that would add to it fails before it generates anything. The
// words are NeMo Gym's, which rows quote.
func errFrozen(key string) error {
	return fmt.Errorf("Token capture for rollout %s is already frozen", key)
}

func errRetired(key string) error { return fmt.Errorf("Token capture for rollout %s is retired", key) }

// openState is key's state when its capture still takes calls.
func (s *TokenStore) openState(key string) (*tokenState, error) {
	st, err := s.readState(key)
	switch {
	case err != nil:
		return nil, err
	case st.Retired:
		return nil, errRetired(key)
	case st.Frozen:
		return nil, errFrozen(key)
	}
	return st, nil
}

// BeginCall records that callID is about to be dispatched: a call that
// leaves no entry is then seen as lost.
func (s *TokenStore) BeginCall(key, callID string) error {
	return s.locked(key, false, func() error {
		if _, err := s.openState(key); err != nil {
			return err
		}
		return appendSynced(s.path(key, ".tokens.intents"), []byte(callID+"\n"))
	})
}

// Append adds one entry (its sorted-key JSON, no newline), synced to disk:
// once more is nothing, the same call with other tokens marks the rollout
// incomplete.
func (s *TokenStore) Append(key, callID string, entry []byte) error {
	digest := sha256Hex(entry)
	return s.locked(key, false, func() error {
		st, err := s.openState(key)
		if err != nil {
			return err
		}
		changed, err := s.syncIndex(key, st)
		if err != nil {
			return err
		}
		if old, ok := st.EntryDigests[callID]; ok {
			if old == digest {
				if changed {
					return s.writeState(key, st, false)
				}
				return nil
			}
			st.Incomplete = true
			st.Version++
			return errors.Join(fmt.Errorf("model call id %q was reused with a different payload for rollout %q", callID, key), s.writeState(key, st, true))
		}
		path := s.path(key, ".tokens.jsonl")
		if err := appendSynced(path, append(entry[:len(entry):len(entry)], '\n')); err != nil {
			return err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		st.IndexedSize = fi.Size()
		st.EntryDigests[callID] = digest
		st.Version++
		// The entry's own sync is what makes it durable; the index is
		// rebuilt from the entries when it is behind.
		return s.writeState(key, st, false)
	})
}

// MarkIncomplete records that a call of key (callID, "" for one that is
// not a model call) left no usable entry.
func (s *TokenStore) MarkIncomplete(key, callID string) error {
	return s.locked(key, false, func() error {
		st, err := s.readState(key)
		if err != nil {
			return err
		}
		if st.Retired {
			return errRetired(key)
		}
		st.Incomplete = true
		st.Version++
		if err := s.writeState(key, st, true); err != nil {
			return err
		}
		if err := appendSynced(s.path(key, ".tokens.incomplete"), []byte(callID+"\n")); err != nil {
			return err
		}
		return syncDir(s.dir)
	})
}

// Delete removes key's capture but its lock, before the rollout runs.
func (s *TokenStore) Delete(key string) error {
	return s.locked(key, false, func() error {
		var errs []error
		for _, suffix := range []string{".tokens.jsonl", ".tokens.incomplete", ".tokens.intents", ".tokens.state.json"} {
			if err := os.Remove(s.path(key, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return errors.Join(append(errs, syncDir(s.dir))...)
	})
}

// TokenSnapshot is a frozen capture: its entries, whether a call was lost,
// and the identity retirement must name.
type TokenSnapshot struct {
	Entries    [][]byte
	Incomplete bool
	SnapshotID string
	Version    int64
}

// Freeze stops key's capture taking entries and returns what it holds; a
// second freeze returns the same snapshot.
func (s *TokenStore) Freeze(key string) (*TokenSnapshot, error) {
	var snap *TokenSnapshot
	err := s.locked(key, false, func() error {
		st, err := s.readState(key)
		if err != nil {
			return err
		}
		if st.Retired {
			return errRetired(key)
		}
		changed, err := s.syncIndex(key, st)
		if err != nil {
			return err
		}
		if !st.Frozen {
			st.Frozen, st.SnapshotID = true, newCallID()
			st.Version++
			err = s.writeState(key, st, true)
		} else if changed {
			err = s.writeState(key, st, true)
		}
		if err != nil {
			return err
		}
		entries, err := readLines(s.path(key, ".tokens.jsonl"))
		if err != nil {
			return err
		}
		snap = &TokenSnapshot{Entries: entries, Incomplete: st.Incomplete, SnapshotID: st.SnapshotID, Version: st.Version}
		recorded := map[string]bool{}
		for _, l := range entries {
			var e struct {
				ModelCallID string `json:"model_call_id"`
			}
			if err := json.Unmarshal(l, &e); err != nil {
				return fmt.Errorf("invalid token-capture entry of rollout %s: %w", key, err)
			}
			recorded[e.ModelCallID] = true
		}
		intents, err := readLines(s.path(key, ".tokens.intents"))
		if err != nil {
			return err
		}
		for _, id := range intents {
			if !recorded[string(id)] {
				snap.Incomplete = true
			}
		}
		return nil
	})
	return snap, err
}

// Drop retires a frozen snapshot once its row is durable: the entries go,
// the state stays as a tombstone a late writer of the attempt still sees.
// It reports false, changing nothing, when the capture is not that
// snapshot.
func (s *TokenStore) Drop(key, snapshotID string, version int64) (bool, error) {
	dropped := false
	err := s.locked(key, false, func() error {
		st, err := s.readState(key)
		if err != nil {
			return err
		}
		if !st.Frozen || st.SnapshotID != snapshotID || st.Version != version {
			return nil
		}
		for _, suffix := range []string{".tokens.jsonl", ".tokens.incomplete", ".tokens.intents"} {
			if err := os.Remove(s.path(key, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		st.IndexedSize, st.EntryDigests, st.Retired = 0, map[string]string{}, true
		if err := s.writeState(key, st, true); err != nil {
			return err
		}
		dropped = true
		return syncDir(s.dir)
	})
	return dropped, err
}

// readLines are a file's non-blank lines, trimmed; none for no file.
func readLines(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// entryLines are key's entries under a shared lock, for parent lookup.
func (s *TokenStore) entryLines(key string) ([][]byte, error) {
	var out [][]byte
	err := s.locked(key, true, func() error {
		var err error
		out, err = readLines(s.path(key, ".tokens.jsonl"))
		return err
	})
	return out, err
}

func appendSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	return errors.Join(werr, f.Close())
}
