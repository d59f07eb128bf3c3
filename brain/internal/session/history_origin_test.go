package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// An extension event journalled without an origin (written before origins
// existed) is served without one: authorship is never inferred from its
// kind or from an "origin" field in its payload.
func TestHistoricalEventWithoutOrigin(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	next := uint64(len(h.records(id))) + 1
	payload := `{"origin":{"kind":"tool","sequence":1},"step":3}`
	legacy := journal.Record{Kind: api.KindExtensionEvent, Data: json.RawMessage(`{"kind":"tool.progress","payload":` + payload + `}`)}
	if err := h.store.Append(ctx, id, next, []journal.Record{legacy}); err != nil {
		t.Fatal(err)
	}
	page, err := h.engine.Events(ctx, id, next-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 1 {
		t.Fatalf("events after %d: %+v", next-1, page.Events)
	}
	ev := page.Events[0]
	if ev.Sequence != next || ev.EventType != "tool.progress" || ev.Origin != nil || string(ev.Data) != payload {
		t.Fatalf("historical event = %+v (origin %+v)", ev, ev.Origin)
	}
}
