package tracing_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"go.opentelemetry.io/otel/codes"
)

// TestLargeStatusDescriptionsAreCut: the description of an Error status
// (a failure's message, which a model provider or an environment chose)
// is cut to tracing.MaxAttributeValue characters, between characters, as
// string attributes are, so that the spans batched with it still reach a
// collector that bounds its requests.
func TestLargeStatusDescriptionsAreCut(t *testing.T) {
	ctx, rcv, tr, shutdown := exporting(t)
	_, span := tr.Start(ctx, "ordinary")
	span.SetStatus(codes.Error, "model_provider_failed: short")
	span.End()
	huge := "model_provider_failed: " + strings.Repeat("é", 1<<19) // 1 MiB of two-byte characters
	for range 20 {
		_, span := tr.Start(ctx, "brain.model_call")
		span.SetStatus(codes.Error, huge)
		span.End()
	}
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown = %v", err)
	}
	spans := rcv.Spans()
	if len(spans) != 21 {
		t.Fatalf("the collector received %d spans, want all 21", len(spans))
	}
	for _, s := range spans {
		if s.StatusCode != "STATUS_CODE_ERROR" {
			t.Fatalf("span %s status %s, want an error", s.Name, s.StatusCode)
		}
		if s.Name == "ordinary" {
			if s.StatusText != "model_provider_failed: short" {
				t.Fatalf("short status description exported as %q", s.StatusText)
			}
			continue
		}
		if n := utf8.RuneCountInString(s.StatusText); n != tracing.MaxAttributeValue || !strings.HasPrefix(huge, s.StatusText) || !utf8.ValidString(s.StatusText) {
			t.Fatalf("status description exported with %d characters (valid UTF-8: %v), want a prefix of %d", n, utf8.ValidString(s.StatusText), tracing.MaxAttributeValue)
		}
	}
}
