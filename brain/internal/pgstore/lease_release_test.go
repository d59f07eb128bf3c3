package pgstore_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// liveLeases answers how many live leases the database holds on session
// id.
func liveLeases(t *testing.T, url, id string) int {
	t.Helper()
	var n int
	sqlScan(t, url, `SELECT count(*) FROM brain_leases WHERE session_id = $1 AND expires_at > now()`, &n, []byte(id))
	return n
}

// TestNoLeaseKeptForAbsentSessions: a node keeps no lease on a session
// that is not there to run. A write for an id no session has is answered
// 404, and the lease it took is not held past its length; a session
// deleted on its owner leaves no lease renewed behind it. (Every held
// lease is renewed each third of the lease length, one statement each, so
// leases kept for nothing would grow without bound with the ids written
// to and the sessions deleted.)
func TestNoLeaseKeptForAbsentSessions(t *testing.T) {
	url := pgtest.Database(t)
	keyFile := filepath.Join(t.TempDir(), "sealing.key")
	os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)), 0o600)
	const lease = time.Second
	n := braintest.Start(t, braintest.Options{Token: "tok", Edit: func(c *brain.Config) {
		c.Storage = brain.Storage{DatabaseURL: url, SealingKeyFile: keyFile, Lease: lease}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: 30 * time.Second}

	const missing = "ses_nosuchsessionnosuchsess"
	status, body, err := sendRaw(ctx, hc, n.URL, missing, "k1", "hello")
	if err != nil || status != http.StatusNotFound {
		t.Fatalf("message to a missing session = %d %s, %v; want 404", status, body, err)
	}

	ttl := int64(0)
	s, err := n.Client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.End(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}

	time.Sleep(3 * lease)
	if got := liveLeases(t, url, missing); got != 0 {
		t.Errorf("a live lease is held on a session id that was never created, %v after the 404", 3*lease)
	}
	if got := liveLeases(t, url, s.ID); got != 0 {
		t.Errorf("a live lease is held on the deleted session %v after its deletion", 3*lease)
	}
}
