package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestPendingObservationsShareEmissionLimit checks that actionable
// observations waiting for delivery are bounded by the emission budget:
// the one that would exceed it is refused and not appended, and the budget
// is free again once a turn delivered them.
func TestPendingObservationsShareEmissionLimit(t *testing.T) {
	h := newHarness(t, Config{IdleTTL: KeepIdle, Limits: Limits{MaxEmittedBytes: 500}}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	ctx := context.Background()
	// Interrupted: observations stay pending until the next message.
	if err := h.engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	binding := api.EnvironmentRef{Name: "box", Sequence: 1}
	report := func(n int) error {
		out := `{"observation":{"scope":"resource","resource":"r","code":"lost","message":"` + strings.Repeat("m", n) + `"}}`
		_, err := h.engine.Report(ctx, id, binding, Report{Type: ReportResult, Output: json.RawMessage(out)})
		return err
	}
	if err := report(100); err != nil {
		t.Fatalf("first observation: %v", err)
	}
	if err := report(100); err != nil {
		t.Fatalf("second observation: %v", err)
	}
	before := len(h.records(id))
	if err := report(100); !errors.Is(err, ErrEmitLimit) {
		t.Fatalf("third observation past the budget = %v, want ErrEmitLimit", err)
	}
	if after := len(h.records(id)); after != before {
		t.Fatalf("a refused observation appended %d records", after-before)
	}
	// A turn delivers the pending observations and frees the budget.
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := report(100); err != nil {
		t.Fatalf("observation after delivery: %v", err)
	}
}
