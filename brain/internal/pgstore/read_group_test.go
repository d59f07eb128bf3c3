package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestRidingClaimsReadTogether: many sends at once on one node, whose
// key reads share statements, each get their own key's outcome: the
// stored answer replayed byte for byte, a conflict for another request's
// digest, or a fresh claim for a free key.
func TestRidingClaimsReadTogether(t *testing.T) {
	url := pgtest.Database(t)
	db := openDB(t, url, nil)
	ctx := context.Background()
	r := db.Requests(nil)
	const keys = 96
	d := idem.Digest([]byte("send"))
	other := idem.Digest([]byte("other"))
	for i := 0; i < keys; i += 3 {
		c, _, err := r.Claim(ctx, "send_message", fmt.Sprint("k", i), d)
		if err != nil || c == nil {
			t.Fatalf("Claim = %v, %v", c, err)
		}
		if err := c.Answer(200, []byte(fmt.Sprint("answer ", i))); err != nil {
			t.Fatal(err)
		}
		c, _, err = r.Claim(ctx, "send_message", fmt.Sprint("k", i+1), other)
		if err != nil || c == nil {
			t.Fatalf("Claim = %v, %v", c, err)
		}
		if err := c.Answer(201, nil); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() {
				c, ans, err := r.ClaimRiding(ctx, "send_message", fmt.Sprint("k", i), d, answerAs, nil)
				switch i % 3 {
				case 0:
					if err != nil || ans == nil || ans.Status != 200 || string(ans.Body) != fmt.Sprint("answer ", i) {
						t.Errorf("round %d key %d: ClaimRiding = %+v, %v; want its answer", round, i, ans, err)
					}
				case 1:
					if !errors.Is(err, idem.ErrConflict) {
						t.Errorf("round %d key %d: ClaimRiding = %+v, %v; want a conflict", round, i, ans, err)
					}
				case 2:
					if err != nil || c == nil {
						t.Errorf("round %d key %d: ClaimRiding = %v, %+v, %v; want a claim", round, i, c, ans, err)
						return
					}
					c.Release()
				}
			})
		}
		wg.Wait()
	}
}
