package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

func startNode(t *testing.T, url, keyFile string) *braintest.Brain {
	return braintest.Start(t, braintest.Options{Token: "tok", Edit: func(c *brain.Config) {
		c.Storage = brain.Storage{DatabaseURL: url, SealingKeyFile: keyFile}
	}})
}

func readyStatus(t *testing.T, b *braintest.Brain) int {
	t.Helper()
	resp, err := http.Get(b.URL + "/health/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTwoNodesShareSessions runs two Brains on one database: a session
// created and run on node A is listed and read, transcript included, on
// node B, and B streams the turn's events live as A commits them; the model key is sealed in the database under the shared key; /health/ready
// answers 503 on both while PostgreSQL is down and 204 once it is back; a
// node with another sealing key refuses to start.
func TestTwoNodesShareSessions(t *testing.T) {
	url := pgtest.Database(t)
	srv := pgtest.Control(t)
	keyFile := filepath.Join(t.TempDir(), "sealing.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, b := startNode(t, url, keyFile), startNode(t, url, keyFile)
	ctx := context.Background()
	s, err := a.Client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m", APIKey: "sk-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	// Node B streams the session's events while node A runs its turn.
	sctx, stopStream := context.WithTimeout(ctx, 30*time.Second)
	defer stopStream()
	streamed := make(chan string, 64)
	go func() {
		defer close(streamed)
		for ev, err := range b.Client(t).Sessions.Open(s.ID).Events(sctx, 0, client.Follow()) {
			if err != nil {
				return
			}
			streamed <- ev.EventType
			if ev.EventType == api.KindTurnEnded {
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // let the stream reach its live part
	if _, err := s.Send(ctx, api.UserInput{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for k := range streamed {
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != api.KindTurnEnded {
		t.Fatalf("node B streamed %v, want the events of A's turn through turn_ended", kinds)
	}
	tr, err := b.Client(t).Sessions.Open(s.ID).Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mustText(tr)), "echo: hello") {
		t.Fatalf("transcript on node B = %+v, want A's turn", tr)
	}
	// The model key is sealed in the database, under the shared key.
	key, err := pgstore.ReadSealingKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t, url, func(o *pgstore.Options) { o.SealingKey = key })
	if v, err := db.Secrets().Get(ctx, s.ID, "model.api_key"); err != nil || string(v) != "sk-secret" {
		t.Fatalf("sealed model key = %q, %v", v, err)
	}
	sqlExec(t, url, "UPDATE brain_secrets SET sealed = set_byte(sealed, 19, get_byte(sealed, 19) # 255)")
	if _, err := db.Secrets().Get(ctx, s.ID, "model.api_key"); !errors.Is(err, pgstore.ErrSealed) {
		t.Fatalf("damaged sealed key = %v, want ErrSealed", err)
	}

	if st := readyStatus(t, a); st != http.StatusNoContent {
		t.Fatalf("ready = %d, want 204", st)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*braintest.Brain{a, b} {
		if st := readyStatus(t, n); st != http.StatusServiceUnavailable {
			t.Errorf("ready with the database down = %d, want 503", st)
		}
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for readyStatus(t, b) != http.StatusNoContent {
		if time.Now().After(deadline) {
			t.Fatal("node B not ready after the database came back")
		}
		time.Sleep(50 * time.Millisecond)
	}

	other := filepath.Join(t.TempDir(), "other.key")
	os.WriteFile(other, []byte(strings.Repeat("cd", 32)), 0o600)
	_, err = brain.New(ctx, brain.Config{DataDir: t.TempDir(), Storage: brain.Storage{DatabaseURL: url, SealingKeyFile: other}})
	if err == nil || !strings.Contains(err.Error(), "sealing key") {
		t.Fatalf("node with another sealing key = %v, want a refusal", err)
	}
}

func mustText(tr api.SessionTranscript) []byte {
	var b strings.Builder
	for _, m := range tr.Messages {
		for _, c := range m.Content {
			b.WriteString(c.Text)
		}
	}
	return []byte(b.String())
}
