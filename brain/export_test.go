package brain

import (
	"context"

	"github.com/brain-in-go/brain/brain/api"
)

// EngineSend runs a synchronous turn on the session engine itself, past
// the HTTP layer, for benchmarks that compare the two.
func (s *Server) EngineSend(ctx context.Context, id string, input api.UserInput) (api.SessionSummary, error) {
	return s.engine.Send(ctx, id, input)
}
