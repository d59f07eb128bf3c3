package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestExportFailureLogHidesHeaders: a collector refusing an export with
// a text that echoes the credential the export carried (in
// OTEL_EXPORTER_OTLP_HEADERS) does not put that credential in the
// server's log: the line says the refusal with the credential left out.
func TestExportFailureLogHidesHeaders(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_BLRP_SCHEDULE_DELAY", "50")
	const key = "otlp-key-7Hq2Lw9Xz"
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, "invalid API key "+r.Header.Get("Api-Key")+" (auth: "+r.Header.Get("Authorization")+")")
	}))
	defer collector.Close()
	var logged envtest.Buffer
	ctx := context.Background()
	s := tracing.Settings{Endpoint: collector.URL, Timeout: 5 * time.Second,
		Headers: map[string]string{"Api-Key": key, "Authorization": "Bearer " + key + "-bearer"},
		Log:     slog.New(slog.NewJSONHandler(&logged, nil))}
	tp, stopTraces, err := tracing.NewTracerProvider(ctx, s)
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider = %v, %v", tp, err)
	}
	le, stopLogs, err := tracing.NewLogSink(ctx, s, nil)
	if err != nil || le == nil {
		t.Fatalf("NewLogSink = %v, %v", le, err)
	}
	_, span := tp.Tracer(tracing.InstrumentationName).Start(ctx, "work")
	span.End()
	if err := le.Emit(ctx, "telemetry", nil, []byte(`{}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(logged.String(), "telemetry export failed") < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = stopTraces(ctx)
	_ = stopLogs(ctx)
	out := logged.String()
	if strings.Count(out, "telemetry export failed") < 2 || !strings.Contains(out, "401") {
		t.Fatalf("the refusals are not logged for both signals:\n%s", out)
	}
	if strings.Contains(out, key) {
		t.Errorf("the log holds the export's credential:\n%s", out)
	}
	if !strings.Contains(out, "invalid API key") {
		t.Errorf("the log leaves out the collector's answer:\n%s", out)
	}
}
