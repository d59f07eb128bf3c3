package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestRequestsAmbiguousOutlivesRetention: retention forgets answered
// entries, but a claim left unanswered by a node that ended stays
// ambiguous however late its key is reused: its request never runs again.
func TestRequestsAmbiguousOutlivesRetention(t *testing.T) {
	url := pgtest.Database(t)
	opts := &idem.Options{Retention: 24 * time.Hour}
	dbA := openDB(t, url, nil)
	a, b := dbA.Requests(opts), openDB(t, url, nil).Requests(opts)
	ctx := context.Background()
	d := idem.Digest([]byte("x"))
	if _, _, err := a.Claim(ctx, "s", "k", d); err != nil {
		t.Fatal(err)
	}
	dbA.Close() // the node ends without answering k
	// 48 hours pass on the database's clock.
	sqlExec(t, url, `UPDATE brain_requests SET claimed_at = claimed_at - interval '48 hours', at = at - interval '48 hours'`)
	if n := b.Len(); n != 1 {
		t.Errorf("Len past the retention = %d, want the unanswered claim kept", n)
	}
	if c, ans, err := b.Claim(ctx, "s", "k", d); !errors.Is(err, idem.ErrAmbiguous) {
		t.Fatalf("Claim of an unanswered claim past the retention = %v, %+v, %v; want ErrAmbiguous", c, ans, err)
	}
}
