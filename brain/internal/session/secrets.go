package session

import (
	"context"
	"sync"
)

// Secrets keeps the secrets a session was created with: the model API key
// and environment credentials. They never reach the journal. Sealing at rest
// is the implementation's job.
type Secrets interface {
	Put(ctx context.Context, session, name string, value []byte) error
	// Get answers the secret, or nil when there is none.
	Get(ctx context.Context, session, name string) ([]byte, error)
	// DeleteAll forgets every secret of session.
	DeleteAll(ctx context.Context, session string) error
}

// Secret names used by the engine.
const (
	SecretModelAPIKey = "model.api_key"
)

// SecretEnvironmentCredential names an environment's credential.
func SecretEnvironmentCredential(environment string) string {
	return "environment." + environment + ".credential"
}

// MemSecrets is an in-memory Secrets.
type MemSecrets struct {
	mu sync.Mutex
	m  map[string]map[string][]byte
}

// NewMemSecrets returns an empty in-memory Secrets.
func NewMemSecrets() *MemSecrets { return &MemSecrets{m: map[string]map[string][]byte{}} }

// Put stores value.
func (s *MemSecrets) Put(_ context.Context, session, name string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[session] == nil {
		s.m[session] = map[string][]byte{}
	}
	s.m[session][name] = append([]byte(nil), value...)
	return nil
}

// Get answers the stored value or nil.
func (s *MemSecrets) Get(_ context.Context, session, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.m[session][name]...), nil
}

// DeleteAll forgets session's secrets.
func (s *MemSecrets) DeleteAll(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, session)
	return nil
}

// Len reports how many sessions have secrets.
func (s *MemSecrets) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
