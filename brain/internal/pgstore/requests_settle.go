package pgstore

import (
	"context"
	"fmt"
	"time"
)

// Unsettled claims. A claim row names the process instance that runs it,
// and a node that finds another live instance's unanswered claim waits
// for it (see Requests). So when this process stops running a claim
// without having committed its end — the claim's own commit was lost with
// its connection, or its answer or release could not be committed, or it
// was abandoned — the row must say so, or every other node would wait on
// it for as long as this process lives. The end is kept here and
// committed as soon as the database answers: a claim whose request did
// not run (a lost claim commit, a failed release) is deleted, so that a
// retry runs it; one whose request ran (a failed answer, an abandon) is
// handed to no instance (instance ''), so that every node answers
// idem.ErrAmbiguous for it, as for a claim of a process that ended. Both
// statements match the claim's id and an unanswered row only, so they
// never touch a later claim of the key or an answer that did commit.
//
// Until then the key is not usable on this node: a claim of it first
// commits the pending end, and answers ErrUnavailable (503, retryable)
// when it cannot.

// unsettled is the pending end of a claim this process no longer runs.
type unsettled struct {
	id      []byte
	release bool // the request did not run: delete the claim
}

// Pauses between attempts of the background settler.
const (
	settleFirstPause = 50 * time.Millisecond
	settleMaxPause   = time.Second
)

// unsettle records that this process no longer runs claim id of k and
// that its end is not committed, and makes sure a settler runs. It is
// called before the claim's local waiters are woken, so that they find
// it.
func (r *Requests) unsettle(k reqKey, id []byte, release bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[reqKey]unsettled{}
	}
	r.pending[k] = unsettled{id: id, release: release}
	if r.settling {
		return
	}
	r.settling = r.db.goBackground(r.settler)
}

// settle commits the pending end of k's claim, if there is one.
func (r *Requests) settle(ctx context.Context, k reqKey) error {
	r.mu.Lock()
	u, ok := r.pending[k]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	ctx, cancel := r.db.opCtx(ctx)
	defer cancel()
	sql := `UPDATE brain_requests SET instance = '' WHERE scope = $1 AND key = $2 AND claim_id = $3 AND status IS NULL`
	if u.release {
		sql = `DELETE FROM brain_requests WHERE scope = $1 AND key = $2 AND claim_id = $3 AND status IS NULL`
	}
	if _, err := r.db.send.Exec(ctx, sql, k.scope, []byte(k.key), u.id); err != nil {
		return fmt.Errorf("settle the claim of %s/%s: %w", k.scope, k.key, classify("settle claim", err, true))
	}
	r.mu.Lock()
	if cur, ok := r.pending[k]; ok && string(cur.id) == string(u.id) {
		delete(r.pending, k)
	}
	r.mu.Unlock()
	return nil
}

// settler commits pending ends until none is left or the DB closes,
// trying again with a growing pause while the database does not answer.
func (r *Requests) settler() {
	pause := settleFirstPause
	for {
		r.mu.Lock()
		keys := make([]reqKey, 0, len(r.pending))
		for k := range r.pending {
			keys = append(keys, k)
		}
		if len(keys) == 0 || r.db.bg.Err() != nil {
			r.settling = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		failed := false
		for _, k := range keys {
			if r.settle(r.db.bg, k) != nil {
				failed = true
			}
		}
		if !failed {
			pause = settleFirstPause
			continue
		}
		select {
		case <-r.db.bg.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, settleMaxPause)
	}
}
