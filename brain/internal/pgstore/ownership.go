package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/brain-in-go/brain/brain/internal/session"
)

// Own implements session.Ownership: it answers the epoch of this node's
// live lease on id, or takes the lease (epoch + 1) when it is free,
// expired or released. Another node's live lease answers an error wrapping
// both ErrLeaseHeld and session.ErrOwnedElsewhere.
func (db *DB) Own(ctx context.Context, id string) (int64, error) {
	if l, ok := db.heldLease(id); ok {
		return l.Epoch, nil
	}
	l, err := db.AcquireLease(ctx, id)
	if errors.Is(err, ErrLeaseHeld) {
		return 0, fmt.Errorf("%w: %w", session.ErrOwnedElsewhere, err)
	}
	if err != nil {
		return 0, err
	}
	if h, ok := db.heldLease(id); ok && h.Epoch > l.Epoch {
		// Another Own of this node took the lease again meanwhile.
		return h.Epoch, nil
	}
	return l.Epoch, nil
}

// Held implements session.Ownership.
func (db *DB) Held(id string) (int64, bool) {
	l, ok := db.heldLease(id)
	return l.Epoch, ok
}

// Release implements session.Ownership: the lease of epoch is forgotten
// at once (the session passivated: no append may use it any more) and
// released in the database in the background. A failure there is
// harmless: the lease expires, and this node may take it again at once.
func (db *DB) Release(id string, epoch int64) {
	db.leaseMu.Lock()
	l, ok := db.leases[id]
	if ok && l.Epoch == epoch {
		delete(db.leases, id)
	}
	db.leaseMu.Unlock()
	if !ok || l.Epoch != epoch {
		return
	}
	release := func() {
		ctx, cancel := context.WithTimeout(context.Background(), db.opts.OpTimeout)
		defer cancel()
		_ = db.ReleaseLease(ctx, l)
	}
	if !db.goBackground(release) {
		// Close began, and waits for no work started now: the lease,
		// which its release of every lease may not have seen, is
		// given back at once (or expires if the pool closed already).
		release()
	}
}

// OnLeaseLost sets the function told when a lease this node holds could
// not be renewed before its local deadline (or was taken by another
// node): the session's activations must stop at once.
func (db *DB) OnLeaseLost(lost func(id string, epoch int64)) {
	db.leaseMu.Lock()
	db.lost = lost
	db.leaseMu.Unlock()
}

// keepLeases renews every held lease each third of the lease length, up
// to renewBatch leases per statement (so a node holding many sessions
// renews them all in a few round trips, not one each). A lease that the
// database refused to renew, or whose local deadline passed while
// renewals failed or found its row locked, is forgotten and reported
// lost. A round in which a statement failed or skipped a locked row is
// run again after renewRetry (see renewing).
func (db *DB) keepLeases(ctx context.Context) {
	db.renewing(ctx, func(ctx context.Context, _ time.Time) bool {
		db.leaseMu.Lock()
		held := make([]Lease, 0, len(db.leases))
		for _, l := range db.leases {
			held = append(held, l)
		}
		db.leaseMu.Unlock()
		// Session order: the statements lock the lease rows in it.
		slices.SortFunc(held, func(a, b Lease) int { return strings.Compare(a.Session, b.Session) })
		ok := true
		for len(held) > 0 && ctx.Err() == nil {
			n := min(len(held), renewBatch)
			ok = db.keepBatch(ctx, held[:n]) && ok
			held = held[n:]
		}
		return ok
	})
}

// keepBatch renews the leases ls in one statement and reports those lost.
// It answers false when the statement failed (nothing was renewed) or
// left a lease whose row was locked unrenewed.
func (db *DB) keepBatch(ctx context.Context, ls []Lease) bool {
	live := make([]Lease, 0, len(ls))
	var deadline time.Time
	for _, l := range ls {
		if time.Now().After(l.Deadline) {
			// Ran out while earlier renewals waited on the database.
			db.forget(l)
			db.reportLost(l)
			continue
		}
		live = append(live, l)
		if deadline.IsZero() || l.Deadline.Before(deadline) {
			deadline = l.Deadline
		}
	}
	if len(live) == 0 {
		return true
	}
	// A renewal that has not answered by a lease's local deadline is too
	// late to keep it, and one that has not answered well before it may
	// be waiting on a dead connection: it is given up then, leaving the
	// rest of the time for a retry on a new one (see renewWait).
	rctx, cancel := context.WithTimeout(ctx, db.renewWait(time.Until(deadline)))
	refused, busy, err := db.renewLeases(rctx, live)
	cancel()
	for _, l := range refused {
		db.reportLost(l)
	}
	if err != nil {
		db.renewFailed()
		busy = live
	}
	for _, l := range busy {
		if time.Now().After(l.Deadline) {
			db.forget(l)
			db.reportLost(l)
		}
	}
	return err == nil && len(busy) == 0
}

func (db *DB) reportLost(l Lease) {
	db.leaseMu.Lock()
	lost := db.lost
	db.leaseMu.Unlock()
	if lost != nil {
		lost(l.Session, l.Epoch)
	}
}

// Route answers where a write to session id belongs: "" when this node
// serves it (it holds the lease, or took it because the lease was free or
// expired), else the public URL of the live node that holds it. Of nodes
// racing for one expired lease one takes it and the others are routed to
// it. A session that does not exist, or whose creation has not committed
// its first append, is served here without taking its lease: the engine
// answers not found, and the lease stays the creating node's to take and
// keep (taking it here and giving it back would end the creation's).
func (db *DB) Route(ctx context.Context, id string) (string, error) {
	if _, ok := db.heldLease(id); ok {
		return "", nil
	}
	for range 3 {
		o, err := db.LeaseOwner(ctx, id)
		if err != nil {
			return "", err
		}
		if o.Live && o.NodeID != db.opts.NodeID && o.PublicURL != "" {
			return o.PublicURL, nil
		}
		next, err := db.journal.Next(ctx, id)
		if err != nil {
			return "", err
		}
		if next <= 1 {
			return "", nil
		}
		_, err = db.Own(ctx, id)
		if err == nil {
			return "", nil
		}
		if !errors.Is(err, ErrLeaseHeld) {
			return "", err
		}
		// Taken by another node since the lookup: route to it.
	}
	return "", fmt.Errorf("pgstore: route session %s: %w", id, ErrUnavailable)
}

// LeaseEpoch answers the epoch of the live lease on session id, whichever
// node holds it (this node's without asking the database), 0 when no
// live lease is held: an invocation token minted under another epoch
// belongs to an execution that a failover interrupted.
func (db *DB) LeaseEpoch(ctx context.Context, id string) (int64, error) {
	if l, ok := db.heldLease(id); ok {
		return l.Epoch, nil
	}
	o, err := db.LeaseOwner(ctx, id)
	if err != nil || !o.Live {
		return 0, err
	}
	return o.Epoch, nil
}
