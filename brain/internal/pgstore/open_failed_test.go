package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestFailedOpenLeavesNoMember: an Open that joined the membership and
// then failed (here its role may not open the connection that listens
// for other nodes' commits) leaves no member behind. Before, the failed
// node stayed a live member for a lease length: other nodes counted and
// forwarded to it, and a retry under the same node id waited for it.
func TestFailedOpenLeavesNoMember(t *testing.T) {
	url := pgtest.Database(t)
	if !strings.Contains(url, "://postgres@") {
		t.Skip("the test needs the private server's URL")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	var db string
	if err := admin.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	role := "capped_" + strings.TrimPrefix(db, "brain_test_")
	// Two connections: the pool's and the upkeep's, none to listen with.
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN CONNECTION LIMIT 2`, role),
		fmt.Sprintf(`ALTER DATABASE %s OWNER TO %s`, db, role),
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{
			fmt.Sprintf(`DROP OWNED BY %s`, role),
			fmt.Sprintf(`ALTER DATABASE %s OWNER TO CURRENT_USER`, db),
			fmt.Sprintf(`DROP ROLE %s`, role),
		} {
			if _, err := admin.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	capped := strings.Replace(url, "://postgres@", "://"+role+"@", 1)
	_, err = pgstore.Open(ctx, pgstore.Options{URL: capped, SealingKey: testKey, NodeID: "n",
		LeaseDuration: time.Minute, OpTimeout: time.Second})
	if !errors.Is(err, pgstore.ErrUnavailable) {
		t.Fatalf("Open with no connection to listen with = %v; want ErrUnavailable", err)
	}
	var members int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM brain_nodes WHERE node_id = 'n' AND expires_at > now()`).Scan(&members); err != nil {
		t.Fatal(err)
	}
	if members != 0 {
		t.Errorf("after Open failed, node n is a live member")
	}
}
