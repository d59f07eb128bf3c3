package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestRefusedCreationForgetsItsSecrets: a creation whose first append the
// database refuses (it waited for a lock longer than lock_timeout) is
// answered 503, nothing of the session durable, and the model key it
// stored is forgotten at once: no credential is kept for a session that
// does not exist.
func TestRefusedCreationForgetsItsSecrets(t *testing.T) {
	url := pgtest.Database(t)
	keyFile := filepath.Join(t.TempDir(), "sealing.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, url, keyFile)
	ctx := context.Background()
	// Hold every journal insert back for longer than lock_timeout.
	blocker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(ctx)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE brain_records IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m", APIKey: "sk-secret"}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL+"/v1/sessions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "create-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("creation whose first append was refused = %d %s, want 503", resp.StatusCode, answer)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var sessions, secrets int
	sqlScan(t, url, `SELECT count(*) FROM brain_sessions`, &sessions)
	sqlScan(t, url, `SELECT count(*) FROM brain_secrets`, &secrets)
	if sessions != 0 || secrets != 0 {
		t.Fatalf("after a refused creation: %d sessions, %d secrets stored; want none of either", sessions, secrets)
	}
}
