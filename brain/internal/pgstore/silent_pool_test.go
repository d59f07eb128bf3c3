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
	const op = 2 * time.Second
	proxy, db := silentPoolNode(t, op)
	ctx := context.Background()
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
	const op = 4 * time.Second
	proxy, db := silentPoolNode(t, op)
	ctx := context.Background()
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

// silentPoolNode opens a node whose pool holds one connection, through a
// silentProxy, with OpTimeout op, and answers them once the node's
// connection answered a Ping: every place of the pool is then taken by
// a connection that Silence makes go silent.
func silentPoolNode(t *testing.T, op time.Duration) (*silentProxy, *pgstore.DB) {
	t.Helper()
	proxy, url := newSilentProxy(t, pgtest.Database(t))
	db := openDB(t, url, func(o *pgstore.Options) {
		o.NodeID, o.PublicURL = "a", "http://a"
		o.LeaseDuration, o.OpTimeout = 30*time.Second, op
		o.MaxConns = 1
	})
	if err := db.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	return proxy, db
}
