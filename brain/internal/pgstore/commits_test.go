package pgstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// budgetSyncText is W1's serial durable commits on PostgreSQL, as on the
// file backend (brain/commits_test.go, RATIONALE.md "Serial durable
// commits per request"): the claim with turn_started, activation_started
// and model_call_started in one append; the answer with the turn's end.
const budgetSyncText = 2

// budgetAsyncAcceptPostgres is what an async submission waits on before
// its 202 on PostgreSQL: one append of turn_started and
// activation_started that inserts the claim row already answered.
const budgetAsyncAcceptPostgres = 1

// TestCommitBudgetSyncTextTurnPostgres counts what a synchronous text turn
// waits on when the node keeps its state in PostgreSQL (the session kept
// in memory under its lease): two commits, the claim and the answer
// riding the turn's appends; and the answers are in brain_requests.
func TestCommitBudgetSyncTextTurnPostgres(t *testing.T) {
	url := pgtest.Database(t)
	keyFile := filepath.Join(t.TempDir(), "sealing.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startNode(t, url, keyFile)
	ctx := context.Background()
	ttl := int64(0)
	sess, err := b.Client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	const turns = 3
	for range turns {
		sum, err := sess.Send(ctx, api.UserInput{Message: "hello"})
		if err != nil || sum.Status != api.StatusIdle {
			t.Fatalf("send: %+v %v", sum, err)
		}
	}
	st := b.Server.CommitStats()["send_message"]
	if st.Requests != turns {
		t.Fatalf("%d requests counted, want %d (%+v)", st.Requests, turns, b.Server.CommitStats())
	}
	if st.BeforeAnswer != turns*budgetSyncText || st.Total != turns*budgetSyncText {
		t.Errorf("a synchronous text turn waited on %d durable commits (%d in all) per turn, want %d",
			st.BeforeAnswer/turns, st.Total/turns, budgetSyncText)
	}
	var answered int
	sqlScan(t, url, `SELECT count(*) FROM brain_requests WHERE scope = 'send_message' AND status = 200`, &answered)
	if answered != turns {
		t.Fatalf("%d answered send_message rows, want %d", answered, turns)
	}
	if _, err := sess.Submit(ctx, api.UserInput{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	if st := b.Server.CommitStats()["send_message.async"]; st.Requests != 1 || st.BeforeAnswer != budgetAsyncAcceptPostgres {
		t.Errorf("an async submission waited on %d durable commits before its 202 (%+v), want %d", st.BeforeAnswer, st, budgetAsyncAcceptPostgres)
	}
	sqlScan(t, url, `SELECT count(*) FROM brain_requests WHERE scope = 'send_message.async' AND status = 202`, &answered)
	if answered != 1 {
		t.Fatalf("%d answered send_message.async rows, want 1: the 202 must be durable before it is sent", answered)
	}
}
