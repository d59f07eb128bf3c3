package brain

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/telemetry"
)

// recordingEmitter keeps the attributes of each record emitted.
type recordingEmitter struct{ attrs []map[string]any }

func (r *recordingEmitter) Emit(_ context.Context, _ string, attrs map[string]any, _ []byte, _ time.Time) error {
	r.attrs = append(r.attrs, attrs)
	return nil
}

// TestOTLPRecordCarriesEnvironmentOrigin: a record an environment's
// controller context sent is exported with its whole origin, the
// environment's name and sequence, as the file's line carries it.
func TestOTLPRecordCarriesEnvironmentOrigin(t *testing.T) {
	rec := &recordingEmitter{}
	s := &otlpSink{emit: rec}
	e := telemetry.Entry{SessionID: "ses_x", Environment: "box",
		Origin: api.EventOrigin{Kind: api.OriginEnvironment, Environment: &api.EnvironmentRef{Name: "box", Sequence: 12}},
		Record: json.RawMessage(`{}`)}
	if err := s.Write(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if len(rec.attrs) != 1 {
		t.Fatalf("%d records emitted", len(rec.attrs))
	}
	want := map[string]any{
		"brain.origin.kind":                 api.OriginEnvironment,
		"brain.origin.environment.name":     "box",
		"brain.origin.environment.sequence": int64(12),
	}
	for k, v := range want {
		if got := rec.attrs[0][k]; got != v {
			t.Errorf("attribute %s = %v (%T), want %v", k, got, got, v)
		}
	}
}
