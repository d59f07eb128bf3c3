package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestCloseKeepsReporter: while a graceful Close waits for a tool that
// returned without finishing, the environment's reporter stays usable:
// a diagnostic event and an actionable observation reported meanwhile (a
// provider that lost the tool's resource reports it so) are recorded, as
// the tool's callbacks are.
func TestCloseKeepsReporter(t *testing.T) {
	h, id, svc, done := closingWithBackgroundTool(t)
	ctx := context.Background()
	// Close has begun once new work is refused.
	for {
		if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "refused"}); err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	binding := api.EnvironmentRef{Name: "box", Sequence: 1}
	event, err := h.engine.Report(ctx, id, binding, Report{Type: ReportEvent, EventType: "box_progress", Data: json.RawMessage(`{"step":1}`)})
	if err != nil {
		t.Fatalf("reporter event during the drain: %v", err)
	}
	observed, err := h.engine.Report(ctx, id, binding, Report{Type: ReportResult,
		Output: json.RawMessage(`{"observation":{"scope":"resource","resource":"vol-1","code":"lost","message":"volume gone"}}`)})
	if err != nil {
		t.Fatalf("reporter observation during the drain: %v", err)
	}
	value := api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"late"`)}
	if _, err := svc.Finish(ctx, &value); err != nil {
		t.Fatalf("finish during the drain: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drain: %v", err)
	}
	h.engine = nil
	recs := h.records(id)
	found := map[uint64]string{}
	for _, r := range recs {
		found[r.Sequence] = r.Kind
	}
	if found[event] != api.KindExtensionEvent || found[observed] != api.KindOutputEmitted {
		t.Fatalf("reports during the drain recorded as %q at %d and %q at %d", found[event], event, found[observed], observed)
	}
}
