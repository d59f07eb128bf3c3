package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestFollowResumedAtTheEnd resumes a followed stream from a saved cursor
// at or past the last event of an ended session, as a consumer that
// stopped after session_ended does on restart: the iteration ends without
// events and without an error.
func TestFollowResumedAtTheEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, _ := startSession(t, ctx)
	if _, err := s.Send(ctx, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	sum, err := s.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, cursor := range []uint64{sum.LastSequence, sum.LastSequence + 10} {
		for ev, err := range s.Events(ctx, cursor, client.Follow()) {
			if err != nil {
				t.Fatalf("Follow from %d (last %d) of an ended session: %v", cursor, sum.LastSequence, err)
			}
			t.Fatalf("Follow from %d (last %d) yielded %+v", cursor, sum.LastSequence, ev)
		}
	}
}
