package idem

import "context"

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
