package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errIDHeld: the node's row in brain_nodes belongs to another process
// whose membership has not run out.
var errIDHeld = errors.New("the id's membership is another process's")

// join makes this process the member under the node's id (Open). A row
// of the id that another process holds, unexpired, is either that of a
// live node, which renews it each third of the lease length, or that of
// a node that stopped without leaving, whose row runs out within a lease
// length. So join waits, trying again each renewRetry: it joins once the
// row ran out, and answers ErrNodeIDInUse as soon as the row was renewed
// (or taken by yet another process), or when ctx ends first.
func (db *DB) join(ctx context.Context) error {
	var first *heldRow
	for {
		err := db.heartbeat(ctx)
		if !errors.Is(err, errIDHeld) {
			return err
		}
		row, err := db.idRow(ctx)
		if err != nil {
			return err
		}
		if row == nil {
			continue // it ran out and was removed meanwhile
		}
		if first == nil {
			first = row
		}
		if row.instance != first.instance || row.expires.After(first.expires) {
			return db.idInUse("another live node renews its membership; give each node its own id, or stop the other first")
		}
		t := time.NewTimer(min(max(row.left, 0), db.renewRetry()) + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return db.idInUse("the membership of another process under it did not run out in time")
		case <-t.C:
		}
	}
}

// heldRow is another process's row of the node's id.
type heldRow struct {
	instance string
	expires  time.Time
	left     time.Duration // until it runs out, by the database's clock
}

// idRow answers the node's row in brain_nodes (nil when there is none).
func (db *DB) idRow(ctx context.Context) (*heldRow, error) {
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	var r heldRow
	var ms float64
	rows, err := db.upkeep.Query(ctx, `SELECT instance, expires_at, extract(epoch FROM expires_at - now()) * 1000
		FROM brain_nodes WHERE node_id = $1`, db.opts.NodeID)
	if err != nil {
		return nil, classify("membership", err, false)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, classify("membership", rows.Err(), false)
	}
	if err := rows.Scan(&r.instance, &r.expires, &ms); err != nil {
		return nil, classify("membership", err, false)
	}
	r.left = time.Duration(ms * float64(time.Millisecond))
	return &r, nil
}

// idInUse answers Open's refusal of the node's id, for the reason why.
func (db *DB) idInUse(why string) error {
	return fmt.Errorf("%w: node id %q: %s", ErrNodeIDInUse, db.opts.NodeID, why)
}
