package tracing_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
)

// TestLargeAttributesAreCut: an attribute value a client chose (a session
// id taken from a request's path, up to the server's header bound) is cut
// to tracing.MaxAttributeValue characters, so that the spans batched with it
// still reach a collector that bounds its requests.
func TestLargeAttributesAreCut(t *testing.T) {
	ctx, rcv, tr, shutdown := exporting(t)
	_, span := tr.Start(ctx, "ordinary")
	span.End()
	huge := strings.Repeat("é", 1<<19) // 1 MiB of two-byte characters
	for range 20 {
		_, span := tr.Start(ctx, "GET /v1/sessions/{id}/events")
		span.SetAttributes(attribute.String("brain.session_id", huge))
		span.End()
	}
	_ = shutdown(ctx)
	spans := rcv.Spans()
	ordinary := false
	for _, s := range spans {
		ordinary = ordinary || s.Name == "ordinary"
		if id, ok := s.Attributes["brain.session_id"].(string); ok {
			if n := utf8.RuneCountInString(id); n > tracing.MaxAttributeValue || !strings.HasPrefix(huge, id) {
				t.Fatalf("brain.session_id exported with %d characters, want a prefix of at most %d", n, tracing.MaxAttributeValue)
			}
		}
	}
	if !ordinary || len(spans) != 21 {
		t.Fatalf("the collector received %d spans (the ordinary one: %v), want all 21", len(spans), ordinary)
	}
}
