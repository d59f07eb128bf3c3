package backend

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// unbornChildEnv names the data directory a child process of
// TestFileBackendSweepsSecretsOfUnbornSession works in.
const unbornChildEnv = "BRAIN_BACKEND_UNBORN_CHILD"

// TestFileBackendSweepsSecretsOfUnbornSession: a process killed after the
// first append of a session being created made the session's directory
// and before the record was durable leaves the directory, holding no
// record, and the session's sealed secrets. The session does not exist
// (the journal opens it empty), so once the backend has opened again its
// secrets and its directory are gone and the journal does not list it,
// while the session that exists and its secrets are kept.
func TestFileBackendSweepsSecretsOfUnbornSession(t *testing.T) {
	if dir := os.Getenv(unbornChildEnv); dir != "" {
		sealAndAppendUnborn(dir)
		return
	}
	ctx := context.Background()
	// The kill must land between the directory's creation and the end of
	// the append's log write: a late kill leaves a session with its record,
	// and the run is tried again.
	for attempt := 1; ; attempt++ {
		dir := t.TempDir()
		killWhenUnbornDirAppears(t, dir)
		sessions := filepath.Join(dir, "sessions", "ses_unborn")
		if _, err := os.Stat(sessions); err != nil {
			t.Fatalf("the killed process left no session directory: %v", err)
		}
		sealed := filepath.Join(dir, "server-metadata", "sessions", "ses_unborn.sealed")
		if _, err := os.Stat(sealed); err != nil {
			t.Fatalf("the killed process left no sealed file: %v", err)
		}

		b, err := Open(ctx, Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		// What the open left, before Next below opens the session again.
		ids, err := b.Journal.Sessions(ctx)
		if err != nil {
			b.Close()
			t.Fatal(err)
		}
		_, dirErr := os.Stat(sessions)
		next, err := b.Journal.Next(ctx, "ses_unborn")
		if err != nil {
			b.Close()
			t.Fatal(err)
		}
		if next != 1 {
			b.Close()
			if attempt == 10 {
				t.Fatalf("after %d kills the first record was durable every time", attempt)
			}
			continue
		}
		if want := []string{"ses_live"}; !slices.Equal(ids, want) {
			t.Errorf("Sessions after the backend opened again = %v, want %v", ids, want)
		}
		if !os.IsNotExist(dirErr) {
			t.Errorf("directory of a session holding no record after the backend opened again: %v; want it removed", dirErr)
		}
		if _, err := os.Stat(sealed); !os.IsNotExist(err) {
			t.Errorf("sealed file of a session holding no record after the backend opened again: %v; want it removed", err)
		}
		if v, err := b.Secrets.Get(ctx, "ses_unborn", "model.api_key"); err != nil || v != nil {
			t.Errorf("secret of a session holding no record after open = %q, %v; want none", v, err)
		}
		if v, err := b.Secrets.Get(ctx, "ses_live", "model.api_key"); err != nil || string(v) != "sk-live" {
			t.Errorf("existing session's secret after open = %q, %v; want sk-live", v, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
}

// killWhenUnbornDirAppears runs sealAndAppendUnborn in a child on dir and
// kills it as soon as the directory of ses_unborn exists.
func killWhenUnbornDirAppears(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileBackendSweepsSecretsOfUnbornSession$", "-test.count=1")
	cmd.Env = append(os.Environ(), unbornChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "sealed\n" {
		cmd.Process.Kill()
		t.Fatalf("child answered %q, %v", line, err)
	}
	sessionDir := filepath.Join(dir, "sessions", "ses_unborn")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(sessionDir); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child never created the session's directory")
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
}

// sealAndAppendUnborn creates ses_live (secrets, then its first record),
// seals the secrets of ses_unborn, says so, and appends the first record
// of ses_unborn: one large enough that its write lasts until the parent,
// watching for the session's directory, kills the process.
func sealAndAppendUnborn(dir string) {
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
	if err := b.Secrets.Put(ctx, "ses_unborn", "model.api_key", []byte("sk-unborn")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	data := append(append([]byte(`"`), bytes.Repeat([]byte("x"), 48<<20)...), '"')
	fmt.Println("sealed")
	if err := b.Journal.Append(ctx, "ses_unborn", 1, []journal.Record{{Kind: "session_creation_started", Data: data}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Killed long before; a parent gone leaves no child behind.
	time.Sleep(time.Minute)
	os.Exit(3)
}
