package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestSilentlyDeadConnectionsKeepLeases: every connection of a node
// stops answering without being closed (a network that dropped them
// without a reset) just after a renewal, while the database stays
// reachable over new connections. A renewal sent on a dead connection
// is given up well before the leases run out and tried again on a new
// connection, so the node keeps its leases and its membership: none
// lapses in the database and none is reported lost.
func TestSilentlyDeadConnectionsKeepLeases(t *testing.T) {
	direct := pgtest.Database(t)
	proxy, url := newSilentProxy(t, direct)
	// Long enough that a loaded machine's slow new connection still
	// comes within the lease, short enough that a renewal waiting on its
	// dead connection for an operation's time lets it lapse.
	const lease = 6 * time.Second
	const sessions = 3
	// As by default, an operation may take as long as a lease.
	n := openLeasedNode(t, url, lease, lease, sessions)
	ctx := context.Background()
	watch, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	// Just after a renewal committed, every connection open goes silent.
	var first, at time.Time
	if err := watch.QueryRow(ctx, `SELECT expires_at FROM brain_leases WHERE session_id = 's0'::bytea`).Scan(&first); err != nil {
		t.Fatal(err)
	}
	for at = first; at.Equal(first); {
		time.Sleep(5 * time.Millisecond)
		if err := watch.QueryRow(ctx, `SELECT expires_at FROM brain_leases WHERE session_id = 's0'::bytea`).Scan(&at); err != nil {
			t.Fatal(err)
		}
	}
	renewed := time.Now()
	proxy.Silence()

	// Over more than a lease length, the leases and the membership stay
	// live in the database.
	var lapsed []string
	for end := renewed.Add(lease + lease/3 + 500*time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		var leases int
		var member bool
		err := watch.QueryRow(ctx, `SELECT (SELECT count(*) FROM brain_leases WHERE node_id = 'a' AND expires_at > now()),
			EXISTS (SELECT 1 FROM brain_nodes WHERE node_id = 'a' AND expires_at > now())`).Scan(&leases, &member)
		if err != nil {
			t.Fatal(err)
		}
		if leases != sessions && len(lapsed) == 0 {
			lapsed = append(lapsed, fmt.Sprintf("%d of %d leases live %v after the last renewal", leases, sessions, time.Since(renewed).Round(time.Millisecond)))
		}
		if !member && len(lapsed) < 2 {
			lapsed = append(lapsed, fmt.Sprintf("the membership lapsed %v after the last renewal", time.Since(renewed).Round(time.Millisecond)))
		}
	}
	for _, l := range lapsed {
		t.Error(l)
	}
	if lost := n.lostLeases(); len(lost) > 0 {
		t.Errorf("leases reported lost while the database answered new connections: %v", lost)
	}
}
