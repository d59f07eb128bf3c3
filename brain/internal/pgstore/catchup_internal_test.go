package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestCatchUpAfterReconnectReadsPastAShortPage: after the listener
// reconnects, a followed session is caught up through everything
// committed meanwhile, even when the records missed fill more than one
// page by bytes (each page then holds fewer than the page's record count).
func TestCatchUpAfterReconnectReadsPastAShortPage(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, Options{URL: pgtest.Database(t), SealingKey: []byte("0123456789abcdef0123456789abcdef"),
		LeaseDuration: 2 * time.Second, OpTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j := db.Journal()
	const session = "catch-up"
	if err := j.Append(ctx, session, 1, []journal.Record{{Kind: "k", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	sub, err := j.Subscribe(ctx, session, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// The wake-ups of these commits are lost: nothing follows the
	// session while they commit.
	j.mu.Lock()
	sf := j.feeds[session]
	delete(j.feeds, session)
	j.mu.Unlock()
	big := []byte(fmt.Sprintf(`{"pad":%q}`, bytes.Repeat([]byte("x"), 3<<20)))
	const missed = 5 // 15 MiB: more than one page of journal.DefaultPageBytes
	for i := range missed {
		if err := j.Append(ctx, session, uint64(2+i), []journal.Record{{Kind: "k", Data: big}}); err != nil {
			t.Fatal(err)
		}
	}
	j.mu.Lock()
	j.feeds[session] = sf
	j.mu.Unlock()

	j.catchUpAll(ctx)
	sf.mu.Lock()
	pushed := sf.pushed
	sf.mu.Unlock()
	if pushed != 1+missed {
		t.Fatalf("after catching up, pushed through %d; want %d", pushed, 1+missed)
	}
}
