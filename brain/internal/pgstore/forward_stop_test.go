package pgstore_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestForwardToStoppedOwner stops the node that owns a session with
// SIGSTOP: a message sent to another node, which forwards it to the
// owner, does not wait forever for the frozen node. Once the owner's
// lease has run out the caller gets 500 ambiguous (A may have carried it
// out), retryable with the same key, and the retry
// (same key) is served by the node it was sent to, which took the lease.
func TestForwardToStoppedOwner(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const lease = 2
	a, b := clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ttl := int64(0) // A keeps the session, and its lease, between turns
	s, err := a.client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// The test's own bound on each attempt, far beyond the lease.
	hc := &http.Client{Timeout: 8 * lease * time.Second}
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequestWithContext(ctx, "POST", b.url+"/v1/sessions/"+s.ID+"/messages", strings.NewReader(`{"input":{"message":"two"}}`))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "two")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("message to B %v after A stopped: %v", time.Since(stopped).Round(time.Millisecond), err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && attempt > 0 {
			break
		}
		var ae api.ApiError
		if json.Unmarshal(body, &ae) != nil || !ae.Retryable {
			t.Fatalf("message to B %v after A stopped = %d %s, want a retryable error or success", time.Since(stopped).Round(time.Millisecond), resp.StatusCode, body)
		}
		// The first one reached A, which may have carried it out before
		// it stopped: ambiguous, never "nothing was done".
		if attempt == 0 && (resp.StatusCode != http.StatusInternalServerError || ae.Code != api.CodeAmbiguous) {
			t.Fatalf("the message A held = %d %s, want 500 %s", resp.StatusCode, body, api.CodeAmbiguous)
		}
		if time.Since(stopped) > 4*lease*time.Second {
			t.Fatalf("B still answers %d %s %v after A stopped", resp.StatusCode, body, time.Since(stopped).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
	tr, err := b.client(t).Sessions.Open(s.ID).Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if text := string(mustText(tr)); !strings.Contains(text, "echo: one") || !strings.Contains(text, "echo: two") {
		t.Fatalf("transcript on B = %q, want both turns", text)
	}
}
