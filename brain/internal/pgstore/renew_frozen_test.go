package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestLeasesLostOnTimeWhileDatabaseHangs freezes PostgreSQL (SIGSTOP:
// connections stay open, nothing answers) while a node holds several
// leases. The node cannot renew them, so each must be reported lost (its
// session stopped) once its lease has run out locally, not an operation
// timeout later for each lease renewed before it: until then the node
// keeps running activations whose lease another node may already hold.
func TestLeasesLostOnTimeWhileDatabaseHangs(t *testing.T) {
	url := pgtest.Database(t)
	srv := pgtest.Control(t)
	const lease, op = time.Second, 4 * time.Second
	db := openDB(t, url, func(o *pgstore.Options) {
		o.Fenced, o.KeepLeases, o.LeaseDuration, o.OpTimeout = true, true, lease, op
	})
	var mu sync.Mutex
	lost := map[string]time.Time{}
	db.OnLeaseLost(func(id string, epoch int64) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := lost[id]; !ok {
			lost[id] = time.Now()
		}
	})
	ctx := context.Background()
	const sessions = 3
	for i := range sessions {
		if _, err := db.AcquireLease(ctx, fmt.Sprint("s", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Freeze(); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	defer func() {
		if err := srv.Thaw(); err != nil {
			t.Error(err)
		}
	}()
	// Every lease was last renewed before the freeze, so each ran out
	// locally by frozen + lease; a renewal tick (lease/3) and a loaded
	// machine are allowed for.
	bound := frozen.Add(lease + time.Second)
	time.Sleep(time.Until(bound) + 3*op)
	mu.Lock()
	defer mu.Unlock()
	for i := range sessions {
		id := fmt.Sprint("s", i)
		at, ok := lost[id]
		switch {
		case !ok:
			t.Errorf("the lease of %s was never reported lost (%v after the freeze)", id, time.Since(frozen))
		case at.After(bound):
			t.Errorf("the lease of %s was reported lost %v after the freeze; it ran out within %v", id, at.Sub(frozen), lease)
		}
	}
}
