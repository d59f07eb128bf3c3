package pgstore

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestReadOnlyDatabaseIsUnavailable: a database that turned read-only
// (a primary demoted to a standby in a failover, or set read-only by its
// operator) refuses every write, nothing committed: each fails as
// unavailable (503, retryable), not as an error of unknown kind, and
// reads go on. Once the database takes writes again, they commit.
func TestReadOnlyDatabaseIsUnavailable(t *testing.T) {
	url := pgtest.Database(t)
	db := openPlain(t, url)
	ctx := context.Background()
	j := db.Journal()
	if err := j.Append(ctx, "s", 1, oneRecord()); err != nil {
		t.Fatal(err)
	}
	readOnly := func(on bool) {
		t.Helper()
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `SET default_transaction_read_only = off`); err != nil {
			t.Fatal(err)
		}
		sql := `ALTER DATABASE ` + pgx.Identifier{c.Config().Database}.Sanitize()
		if on {
			sql += ` SET default_transaction_read_only = on`
		} else {
			sql += ` RESET default_transaction_read_only`
		}
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
		db.pool.Reset() // new connections take the database's setting
	}
	readOnly(true)
	d := idem.Digest([]byte("x"))
	for name, write := range map[string]func() error{
		"append": func() error { return j.Append(ctx, "s", 2, oneRecord()) },
		"claim": func() error {
			_, _, err := db.Requests(nil).Claim(ctx, "s", "k", d)
			return err
		},
		"acquire lease": func() error {
			_, err := db.AcquireLease(ctx, "s")
			return err
		},
		"delete": func() error { return j.Delete(ctx, "s") },
	} {
		if err := write(); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("%s on a read-only database = %v, want ErrUnavailable", name, err)
		}
	}
	if recs, err := j.Read(ctx, "s", 0, 0, 0); err != nil || len(recs) != 1 {
		t.Fatalf("read on a read-only database = %d records, %v", len(recs), err)
	}
	readOnly(false)
	if err := j.Append(ctx, "s", 2, oneRecord()); err != nil {
		t.Fatalf("append once the database takes writes again = %v", err)
	}
	if _, _, err := db.Requests(nil).Claim(ctx, "s", "k", d); err != nil {
		t.Fatalf("claim once the database takes writes again = %v", err)
	}
}
