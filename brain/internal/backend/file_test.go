package backend

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// sealChildEnv names the data directory a child process of
// TestFileBackendSweepsOrphanedSecrets works in.
const sealChildEnv = "BRAIN_BACKEND_SEAL_CHILD"

// TestFileBackendSweepsOrphanedSecrets: a process killed after it sealed
// the secrets of a session being created and before the session's first
// record was written leaves the sealed file of a session that does not
// exist; once the backend has opened again it is gone, with the temporary
// file of a seal cut short, while the secrets of a session that exists
// are kept.
func TestFileBackendSweepsOrphanedSecrets(t *testing.T) {
	if dir := os.Getenv(sealChildEnv); dir != "" {
		sealAndWait(dir)
		return
	}
	ctx := context.Background()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileBackendSweepsOrphanedSecrets$", "-test.count=1")
	cmd.Env = append(os.Environ(), sealChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "sealed\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child answered %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	sessions := filepath.Join(dir, "server-metadata", "sessions")
	orphan := filepath.Join(sessions, "ses_orphan.sealed")
	raw, err := os.ReadFile(orphan)
	if err != nil {
		t.Fatalf("the killed process left no sealed file: %v", err)
	}
	// What a seal killed before its rename leaves: the sealed bytes under
	// a temporary name.
	tmp := filepath.Join(sessions, ".tmp-ses_gone.sealed-1234")
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	b, err := Open(ctx, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, p := range []string{orphan, tmp} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after the backend opened again: %v; want it removed", filepath.Base(p), err)
		}
	}
	if v, err := b.Secrets.Get(ctx, "ses_orphan", "model.api_key"); err != nil || v != nil {
		t.Errorf("orphaned secret after open = %q, %v; want none", v, err)
	}
	if v, err := b.Secrets.Get(ctx, "ses_live", "model.api_key"); err != nil || string(v) != "sk-live" {
		t.Errorf("existing session's secret after open = %q, %v; want sk-live", v, err)
	}
}

// sealAndWait creates ses_live (secrets, then its first record) and seals
// the secrets of ses_orphan in the data directory dir, as a create does
// before its first record, then says so and waits to be killed.
func sealAndWait(dir string) {
	ctx := context.Background()
	b, err := Open(ctx, Options{DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := b.Secrets.Put(ctx, "ses_live", "model.api_key", []byte("sk-live")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := b.Journal.Append(ctx, "ses_live", 1, []journal.Record{{Kind: "session_creation_started", Data: []byte(`{}`)}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := b.Secrets.Put(ctx, "ses_orphan", "model.api_key", []byte("sk-orphan")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("sealed")
	// Killed long before; a parent gone leaves no child behind.
	time.Sleep(time.Minute)
	os.Exit(3)
}
