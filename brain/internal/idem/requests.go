package idem

import (
	"context"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// Requests is an idempotency store with this package's rules, as the HTTP
// layer uses it: Store (through FileRequests) or a database backend's
// store shared by several nodes.
type Requests interface {
	Claim(ctx context.Context, scope, key string, digest [32]byte) (Claimed, *Answer, error)
	ClaimHinted(ctx context.Context, scope, key string, digest [32]byte, hint []byte) (Claimed, *Answer, error)
	Close() error
}

// Claimed is a claim a Requests granted: Claim's methods.
type Claimed interface {
	Answer(status int, body []byte) error
	AnswerDerivable(status int, body []byte) error
	Release() error
	// Abandon ends the claim without an answer: the key answers
	// ErrAmbiguous from then on and the request never runs again.
	Abandon()
}

// FileRequests answers s as a Requests.
func FileRequests(s *Store) Requests { return fileRequests{s} }

type fileRequests struct{ s *Store }

// Healthy answers Store.Healthy.
func (f fileRequests) Healthy() error { return f.s.Healthy() }

func (f fileRequests) Claim(ctx context.Context, scope, key string, digest [32]byte) (Claimed, *Answer, error) {
	return claimed(f.s.Claim(ctx, scope, key, digest))
}

func (f fileRequests) ClaimHinted(ctx context.Context, scope, key string, digest [32]byte, hint []byte) (Claimed, *Answer, error) {
	return claimed(f.s.ClaimHinted(ctx, scope, key, digest, hint))
}

func (f fileRequests) Close() error { return f.s.Close() }

// claimed keeps a nil *Claim a nil Claimed.
func claimed(c *Claim, a *Answer, err error) (Claimed, *Answer, error) {
	if c == nil {
		return nil, a, err
	}
	return c, a, err
}

// Rider is a Requests whose claims can ride the journal's commits (see
// Store.ClaimRiding): the file store, and the PostgreSQL backend's
// store, which writes the claim and answer rows in the transactions of
// the journal appends that carry their records.
type Rider interface {
	ClaimRiding(ctx context.Context, scope, key string, digest [32]byte,
		answer func(v any, err error) (status int, body []byte, ok bool), onDurable func()) (RidingClaim, *Answer, error)
}

// RidingClaim is a claim granted by a Rider: Claimed and what the
// journal's commits carry for it.
type RidingClaim interface {
	Claimed
	Ride() *commits.Ride
	Durable() bool
	Recorded() (Answer, bool)
}

func (f fileRequests) ClaimRiding(ctx context.Context, scope, key string, digest [32]byte,
	answer func(v any, err error) (int, []byte, bool), onDurable func()) (RidingClaim, *Answer, error) {
	c, a, err := f.s.ClaimRiding(ctx, scope, key, digest, answer, onDurable)
	if c == nil {
		return nil, a, err
	}
	return c, a, err
}
