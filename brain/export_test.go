package brain

import (
	"context"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// EngineSend runs a synchronous turn on the session engine itself, past
// the HTTP layer, for benchmarks that compare the two.
func (s *Server) EngineSend(ctx context.Context, id string, input api.UserInput) (api.SessionSummary, error) {
	return s.engine.Send(ctx, id, input)
}

// StoredListings answers how many times the sessions directory was listed
// for brain_sessions_passivated.
func (s *Server) StoredListings() int {
	s.census.mu.Lock()
	defer s.census.mu.Unlock()
	return s.census.listings
}

// SetStoredEvery sets how long a count of the stored sessions is kept.
func (s *Server) SetStoredEvery(every time.Duration) {
	s.census.mu.Lock()
	defer s.census.mu.Unlock()
	s.census.every = every
}
