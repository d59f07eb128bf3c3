package agentloop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestDefaultTurnCarriesPendingResults: a turn started by a message is
// also handed the batch of background results still pending (a tool that
// finished while the session was interrupted, or just before the
// message). A successful return completes that batch, so the loop must
// show those results to the model and keep them in the transcript, before
// the user's message.
func TestDefaultTurnCarriesPendingResults(t *testing.T) {
	f := &fakeServices{answers: []api.ModelResult{{Message: text("assistant", "noted"), StopReason: api.StopEndTurn}}}
	ended := json.RawMessage(`{"sequence":5,"outcome":{"status":"ok","value":"report.pdf written"},"is_error":false}`)
	in := api.TurnInput{
		Input:      &api.UserInput{Message: "and now?"},
		Transcript: []api.Message{text("user", "write the report in the background"), text("assistant", "started")},
		Events:     []api.Event{{Sequence: 9, EventType: api.KindToolCallEnded, Data: ended}},
	}
	if _, err := Default(context.Background(), f, in); err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 1 {
		t.Fatalf("%d model calls", len(f.requests))
	}
	msgs := f.requests[0].Messages
	var seen bool
	for _, m := range msgs[2:] {
		if strings.Contains(m.Text(), "report.pdf written") {
			seen = true
		}
	}
	if !seen {
		t.Fatalf("the model was not shown the pending result: %+v", msgs)
	}
	if last := msgs[len(msgs)-1]; last.Role != api.RoleUser || !strings.HasSuffix(last.Text(), "and now?") {
		t.Fatalf("the user's message is not last: %+v", last)
	}
	var saved bool
	for _, m := range f.saved {
		if strings.Contains(m.Text(), "report.pdf written") {
			saved = true
		}
	}
	if !saved {
		t.Fatalf("the pending result is not in the saved transcript: %+v", f.saved)
	}
}
