package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestDatabasesAreFreshAndSeparate writes into one database and checks
// that another test database does not see it.
func TestDatabasesAreFreshAndSeparate(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.Database(t), pgtest.Database(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE x (v int); INSERT INTO x VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'x'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("second database sees %d tables named x (%v)", n, err)
	}
}

// TestStopImmediateKeepsCommits stops the private server as in a crash and
// checks that a committed row is there after the restart.
func TestStopImmediateKeepsCommits(t *testing.T) {
	ctx := context.Background()
	u := pgtest.Database(t)
	srv := pgtest.Control(t)
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE x (v int); INSERT INTO x VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err == nil {
		t.Fatal("ping succeeded with the server stopped")
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c2, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	var v int
	if err := c2.QueryRow(ctx, "SELECT v FROM x").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart v = %d, %v; want 42", v, err)
	}
}
