package loophost

// maxKeptRefusals bounds the failed service calls an activation keeps for
// the ref of its error answer: a guest that retries a refused call in a
// loop until its deadline must not grow the host's memory with each
// refusal.
const maxKeptRefusals = 1024

// refusals numbers the failed service calls of one activation (a
// failure's ref, from 1) and keeps the latest maxKeptRefusals of them.
type refusals struct {
	n    uint32
	kept []error // ref r at (r-1) % maxKeptRefusals
}

// add keeps err and answers its ref.
func (r *refusals) add(err error) uint32 {
	if len(r.kept) < maxKeptRefusals {
		r.kept = append(r.kept, err)
	} else {
		r.kept[r.n%maxKeptRefusals] = err
	}
	r.n++
	return r.n
}

// get answers the failure ref names, or nil for 0, a ref not given, or
// one older than the latest maxKeptRefusals.
func (r *refusals) get(ref uint32) error {
	if r == nil || ref == 0 || ref > r.n || r.n-ref >= maxKeptRefusals {
		return nil
	}
	return r.kept[(ref-1)%maxKeptRefusals]
}
