package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestSilentlyDeadConnectionFreesItsPlace: every connection of a node's
// pool stops answering without being closed (a network that dropped
// them without a reset) while the database stays reachable over new
// connections. The request sent on a dead connection fails after
// OpTimeout; the next request does not wait for the dead connection's
// place in the pool but is served at once over a new connection.
func TestSilentlyDeadConnectionFreesItsPlace(t *testing.T) {
	direct := pgtest.Database(t)
	proxy, url := newSilentProxy(t, direct)
	const op = 2 * time.Second
	db := openDB(t, url, func(o *pgstore.Options) {
		o.NodeID, o.PublicURL = "a", "http://a"
		o.LeaseDuration, o.OpTimeout = 30*time.Second, op
		// Every place of the pool is taken by a connection that goes
		// silent.
		o.MaxConns = 1
	})
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.Silence()
	if err := db.Ping(ctx); err == nil {
		t.Fatal("Ping over a connection that stopped answering succeeded")
	}
	start := time.Now()
	err := db.Ping(ctx)
	took := time.Since(start)
	if err != nil {
		t.Errorf("Ping after the dead connection failed = %v (after %v), want it served over a new connection", err, took.Round(time.Millisecond))
	} else if took > op/2 {
		t.Errorf("Ping after the dead connection took %v", took.Round(time.Millisecond))
	}
}

// TestSilentlyDeadIdleConnectionIsPassedOver: a connection of the pool
// that died without a word while it was idle (a network that dropped it
// without a reset) costs the next request a short check, not the
// request: it is served over a new connection well within OpTimeout.
func TestSilentlyDeadIdleConnectionIsPassedOver(t *testing.T) {
	direct := pgtest.Database(t)
	proxy, url := newSilentProxy(t, direct)
	const op = 4 * time.Second
	db := openDB(t, url, func(o *pgstore.Options) {
		o.NodeID, o.PublicURL = "a", "http://a"
		o.LeaseDuration, o.OpTimeout = 30*time.Second, op
		o.MaxConns = 1
	})
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	// The pool checks a connection idle for more than a second before
	// handing it out.
	time.Sleep(1100 * time.Millisecond)
	proxy.Silence()
	start := time.Now()
	err := db.Ping(ctx)
	took := time.Since(start)
	if err != nil {
		t.Errorf("Ping over a pool whose idle connection died = %v (after %v), want it served over a new connection", err, took.Round(time.Millisecond))
	} else if took > op/2 {
		t.Errorf("Ping over a pool whose idle connection died took %v", took.Round(time.Millisecond))
	}
}
