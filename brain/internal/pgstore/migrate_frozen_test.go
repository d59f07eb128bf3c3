package pgstore_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestNodeStoppedMidMigrationDoesNotHoldOthers stops a brain serve
// process (SIGSTOP) while it migrates a database one version behind the
// binary: another node started meanwhile still opens, within a few
// operation timeouts, and finds the schema at the binary's version. The
// stopped process's hold on the migration ends with its transaction,
// which the server ends once it has waited that long for the process.
func TestNodeStoppedMidMigrationDoesNotHoldOthers(t *testing.T) {
	url := pgtest.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A database one migration behind: the last table and version undone.
	openDB(t, url, nil).Close()
	sqlExec(t, url, "DROP TABLE brain_tool_modules")
	sqlExec(t, url, "UPDATE brain_schema SET version = version - 1")

	// The schema table is locked while the process starts, so that its
	// migration waits on the server, where it is stopped.
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE brain_schema IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	const idle = time.Second // the stopped process's idle_in_transaction_session_timeout
	cmd := exec.Command(brainBinary(t), "serve")
	cmd.Env = append(os.Environ(), "BRAIN_DATA_DIR="+filepath.Join(t.TempDir(), "data"), "BRAIN_LISTEN=127.0.0.1:0",
		"BRAIN_API_TOKEN=tok", "BRAIN_LOG_LEVEL=warn", "BRAIN_SEALING_KEY_FILE="+sealingKey(t),
		"BRAIN_DATABASE_URL="+url+"&idle_in_transaction_session_timeout=1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Process.Signal(syscall.SIGCONT)
		<-done
	})
	// Wait until the process's migration waits for the schema table.
	for {
		var waiting bool
		if err := holder.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE relation = 'brain_schema'::regclass AND NOT granted AND pid <> pg_backend_pid())`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case <-done:
			t.Fatal("brain serve exited before migrating")
		case <-ctx.Done():
			t.Fatal("brain serve never reached its migration")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The table is free again: the stopped process's statement completes
	// on the server, which then waits for the process.
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	const op = 2 * time.Second
	start := time.Now()
	db, err := pgstore.Open(ctx, pgstore.Options{URL: url, SealingKey: testKey, NodeID: "b", OpTimeout: op})
	if err != nil {
		t.Fatalf("Open while another node is stopped mid-migration = %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	defer db.Close()
	if took := time.Since(start); took > 2*op {
		t.Errorf("Open took %v, want at most %v (the stopped node's idle bound is %v)", took, 2*op, idle)
	}
	var v int
	var tools bool
	if err := holder.QueryRow(ctx, "SELECT version, to_regclass('brain_tool_modules') IS NOT NULL FROM brain_schema").Scan(&v, &tools); err != nil || v != pgstore.SchemaVersion || !tools {
		t.Fatalf("schema = version %d, tool modules table %v, %v; want version %d with the table", v, tools, err, pgstore.SchemaVersion)
	}
}
