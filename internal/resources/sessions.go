package resources

import "sync"

// SessionStore is per-session state the base can clear when an episode
// ends at /verify.
type SessionStore interface {
	Delete(sessionID string)
}

// Sessions is per-rollout state keyed by session id (server.SessionID),
// safe for the concurrent requests of many rollouts. A NeMo Gym resources
// server keeps the same in a dict keyed by request.session["session_id"].
type Sessions[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// Get returns the session's state.
func (s *Sessions[T]) Get(id string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[id]
	return v, ok
}

// Set replaces the session's state.
func (s *Sessions[T]) Set(id string, v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]T{}
	}
	s.m[id] = v
}

// Update replaces the session's state with fn's result in one step, so two
// tool calls of the same rollout cannot interleave their read and write.
// fn gets the current state and whether there was one.
func (s *Sessions[T]) Update(id string, fn func(v T, ok bool) T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]T{}
	}
	v, ok := s.m[id]
	v = fn(v, ok)
	s.m[id] = v
	return v
}

// Delete forgets the session.
func (s *Sessions[T]) Delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// Len is the number of sessions held.
func (s *Sessions[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
