package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestExhaustedPoolIsUnavailable: while every connection of the node's
// pool is busy for longer than an operation may wait (the pool
// exhausted), each write that could not get a connection was never sent:
// it fails as unavailable (503, retryable, nothing committed), never with
// its outcome unknown. So a riding claim whose append never left the node
// is released, its key free again, and nothing of the outage sticks: once
// connections are free, every write commits, and the journal holds
// exactly what was acknowledged.
func TestExhaustedPoolIsUnavailable(t *testing.T) {
	url := pgtest.Database(t)
	db, err := Open(context.Background(), Options{URL: url, SealingKey: []byte("0123456789abcdef0123456789abcdef"),
		MaxConns: 2, OpTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	j, r := db.Journal(), db.Requests(nil)
	if err := j.Append(ctx, "s", 1, oneRecord()); err != nil {
		t.Fatal(err)
	}
	if err := j.WriteCheckpoint(ctx, "s", 1, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	d := idem.Digest([]byte("send"))
	answer := func(v any, err error) (int, []byte, bool) { return 200, []byte(`{}`), err == nil }
	c, _, err := r.ClaimRiding(ctx, "send_message", "k", d, answer, nil)
	if err != nil || c == nil {
		t.Fatalf("ClaimRiding = %v, %v", c, err)
	}

	var held []*pgxpool.Conn
	for range 2 {
		conn, err := db.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
	}
	writes := map[string]func() error{
		"append": func() error { return j.Append(ctx, "s", 2, oneRecord()) },
		"riding append": func() error {
			return j.Append(ctx, "s", 2, []journal.Record{{Kind: commits.ClaimKind, Data: c.Ride().Claim}})
		},
		"claim": func() error {
			_, _, err := r.Claim(ctx, "create_session", "k2", d)
			return err
		},
		"acquire lease": func() error {
			_, err := db.AcquireLease(ctx, "s2")
			return err
		},
		"checkpoint": func() error { return j.WriteCheckpoint(ctx, "s", 1, []byte(`{"n":2}`)) },
		"delete":     func() error { return j.Delete(ctx, "s") },
	}
	for name, write := range writes {
		err := write()
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, journal.ErrOutcomeUnknown) {
			t.Errorf("%s with the pool exhausted = %v, want ErrUnavailable (nothing sent), not an unknown outcome", name, err)
		}
	}
	if c.Durable() {
		t.Error("a riding claim whose append was never sent counts as maybe durable")
	}
	if err := c.Release(); err != nil {
		t.Errorf("Release of a riding claim whose append was never sent = %v", err)
	}
	for _, conn := range held {
		conn.Release()
	}

	if err := j.Append(ctx, "s", 2, oneRecord()); err != nil {
		t.Fatalf("append once connections are free = %v", err)
	}
	if c2, a, err := r.ClaimRiding(ctx, "send_message", "k", d, answer, nil); err != nil || a != nil || c2 == nil {
		t.Fatalf("claim of the released key = %v, %+v, %v; want a fresh claim", c2, a, err)
	} else {
		c2.Release()
	}
	recs, err := j.Read(ctx, "s", 0, 0, 0)
	if err != nil || len(recs) != 2 {
		t.Fatalf("journal = %d records, %v; want the 2 acknowledged", len(recs), err)
	}
}
