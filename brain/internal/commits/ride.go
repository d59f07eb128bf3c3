package commits

import (
	"context"
	"encoding/json"
)

// Private journal record kinds of a Ride (a leading '_' keeps them out of
// the session's public events). Their data is the idem package's format.
const (
	ClaimKind  = "_request_claimed"
	AnswerKind = "_request_answered"
)

// Ride is the idempotency bookkeeping a request's journal commits carry
// instead of flushes of its own: the claim rides the request's first
// journal commit, the answer the commit that ends its turn.
type Ride struct {
	// Claim is the data of the request's ClaimKind record.
	Claim json.RawMessage
	// Answer answers the data of the AnswerKind record for the request's
	// outcome (the value and error its operation returns), or nil when
	// that outcome is not an answer to record (the claim is then released
	// or abandoned by its owner).
	Answer func(v any, err error) json.RawMessage
}

type rideKey struct{}

// WithRide answers ctx carrying r.
func WithRide(ctx context.Context, r *Ride) context.Context {
	return context.WithValue(ctx, rideKey{}, r)
}

// RideFrom answers the Ride ctx carries, or nil.
func RideFrom(ctx context.Context) *Ride {
	r, _ := ctx.Value(rideKey{}).(*Ride)
	return r
}
