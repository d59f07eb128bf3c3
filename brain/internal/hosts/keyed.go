package hosts

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrKeyConflict reports an idempotency key used again, for the same
// tool call, with a different request.
var ErrKeyConflict = errors.New("hosts: the idempotency key was already used with a different request")

// ErrKeyNotTaken reports an idempotency key sent with a service method
// that records nothing: there is no record to answer again.
var ErrKeyNotTaken = errors.New("hosts: an idempotency key is taken only with a service method that records")

// keyID names a keyed request: its tool call and its key.
type keyID [sha256.Size]byte

func keyOf(sessionID string, seq uint64, key string) keyID {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(sessionID)))
	h.Write(n[:])
	h.Write([]byte(sessionID))
	binary.BigEndian.PutUint64(n[:], seq)
	h.Write(n[:])
	h.Write([]byte(key))
	var id keyID
	h.Sum(id[:0])
	return id
}

// keyed is the answer of a keyed request, once done is closed.
type keyed struct {
	digest [sha256.Size]byte
	done   chan struct{}
	seq    uint64
	err    error
}

// maxAnswers answers how many answers of keyed requests a host keeps.
func (r *Registry) maxAnswers() int { return 2 * r.cfg.MaxCommands }

// once runs op once for host id's request req under key, for tool call
// seq of session sessionID, and answers its sequence. The same request
// sent again under the same key (its answer was lost on the way) is
// answered with the first's sequence, without running op again, while
// the host keeps the answer: the latest maxAnswers ones, kept after the
// call closed. One under way is waited for. The same key with another
// request answers ErrKeyConflict. A request op refused keeps no answer,
// so that it may be sent again. Without a key op just runs.
func (r *Registry) once(ctx context.Context, id, sessionID string, seq uint64, key string, req any, op func() (uint64, error)) (uint64, error) {
	if key == "" {
		return op()
	}
	b, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("hosts: encode request: %w", err)
	}
	digest := sha256.Sum256(b)
	k := keyOf(sessionID, seq, key)
	r.mu.Lock()
	h := r.lookupLocked(id)
	if h == nil {
		r.mu.Unlock()
		return 0, fmt.Errorf("host %s: %w", id, ErrUnauthorized)
	}
	if e := h.answers[k]; e != nil {
		r.mu.Unlock()
		if e.digest != digest {
			return 0, fmt.Errorf("tool call %s/%d: %w", sessionID, seq, ErrKeyConflict)
		}
		select {
		case <-e.done:
			return e.seq, e.err
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
	if h.answers == nil {
		h.answers = map[keyID]*keyed{}
	}
	e := &keyed{digest: digest, done: make(chan struct{})}
	h.answers[k] = e
	r.mu.Unlock()

	e.seq, e.err = op()

	r.mu.Lock()
	if e.err != nil {
		delete(h.answers, k)
	} else {
		h.answered = append(h.answered, k)
		for len(h.answered) > r.maxAnswers() {
			delete(h.answers, h.answered[0])
			h.answered = h.answered[1:]
		}
	}
	close(e.done)
	r.mu.Unlock()
	return e.seq, e.err
}
