package pgstore_test

import (
	"context"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestTwoAnswersInOneAppend: an append carrying the answers of two
// claims records each answer on its own. When one claim's row is gone,
// only the other claim's answer counts as recorded: the first is not
// told its answer is kept.
func TestTwoAnswersInOneAppend(t *testing.T) {
	url := pgtest.Database(t)
	a := fencedNode(t, url, "a", "s")
	ctx := context.Background()
	r := a.Requests(nil)
	d := idem.Digest([]byte("send"))
	c1, _, err := r.ClaimRiding(ctx, "send_message", "k1", d, answerAs, nil)
	if err != nil {
		t.Fatal(err)
	}
	c2, _, err := r.ClaimRiding(ctx, "send_message", "k2", d, answerAs, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := []journal.Record{{Kind: commits.ClaimKind, Data: c1.Ride().Claim}, {Kind: commits.ClaimKind, Data: c2.Ride().Claim}}
	if err := a.Journal().Append(ctx, "s", 2, start); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, url, `DELETE FROM brain_requests WHERE scope = 'send_message' AND key = $1`, []byte("k1"))
	end := []journal.Record{
		{Kind: commits.AnswerKind, Data: c1.Ride().Answer("one", nil)},
		{Kind: commits.AnswerKind, Data: c2.Ride().Answer("two", nil)},
	}
	if err := a.Journal().Append(ctx, "s", 4, end); err != nil {
		t.Fatal(err)
	}
	if got, ok := c2.Recorded(); !ok || string(got.Body) != "two" {
		t.Fatalf("Recorded of the claim whose row was there = %+v, %v; want its answer", got, ok)
	}
	if _, status := requestRow(t, url, "k2"); status != 200 {
		t.Fatalf("k2's row status %d, want 200", status)
	}
	if got, ok := c1.Recorded(); ok {
		t.Fatalf("Recorded of the claim whose row was gone = %+v; want none: nothing holds its answer", got)
	}
	if err := c1.Answer(200, []byte("one")); err == nil {
		t.Fatal("Answer of the claim whose row was gone = nil; want an error: its answer is not kept")
	}
	if err := c2.Answer(200, []byte("two")); err != nil {
		t.Fatalf("Answer of the recorded claim = %v", err)
	}
}
