package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
)

// leasedNode is node "a" (public URL http://a), fenced and keeping its
// leases, holding the leases of sessions s0, s1, … each with a first
// append, and the leases it reported lost, as id@epoch.
type leasedNode struct {
	db   *pgstore.DB
	mu   sync.Mutex
	lost []string
}

// openLeasedNode opens a leasedNode on url with leases of lease and
// operations of op, holding the leases of sessions sessions; it is
// closed when t ends.
func openLeasedNode(t *testing.T, url string, lease, op time.Duration, sessions int) *leasedNode {
	t.Helper()
	n := &leasedNode{}
	n.db = openDB(t, url, func(o *pgstore.Options) {
		o.Fenced, o.KeepLeases, o.NodeID, o.PublicURL = true, true, "a", "http://a"
		o.LeaseDuration, o.OpTimeout = lease, op
	})
	n.db.OnLeaseLost(func(id string, epoch int64) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.lost = append(n.lost, fmt.Sprint(id, "@", epoch))
	})
	ctx := context.Background()
	for i := range sessions {
		id := fmt.Sprint("s", i)
		if _, err := n.db.Own(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := n.db.Journal().Append(ctx, id, 1, []journal.Record{rec("k", 0)}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// lostLeases answers the leases reported lost so far, as id@epoch.
func (n *leasedNode) lostLeases() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.lost)
}

// reportedLost reports whether a lease of session id was reported lost.
func (n *leasedNode) reportedLost(id string) bool {
	return slices.ContainsFunc(n.lostLeases(), func(l string) bool { return strings.HasPrefix(l, id+"@") })
}
