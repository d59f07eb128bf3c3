package tracing_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/internal/otlptest"
)

// stalledURL answers the http URL of a loopback port that takes
// connections and never answers them.
func stalledURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// TestShutdownCountsWhatItDidNotExport: a Shutdown whose context ends
// before the collector answered, or whose export the collector refused,
// answers how many spans or log records it did not send; one that sent
// everything answers nil.
func TestShutdownCountsWhatItDidNotExport(t *testing.T) {
	// Nothing is exported before the Shutdown: it flushes all.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "60000")
	t.Setenv("OTEL_BLRP_SCHEDULE_DELAY", "60000")
	stalled := stalledURL(t)
	rcv := otlptest.Start()
	defer rcv.Close()
	refusing := otlptest.Start()
	defer refusing.Close()
	refusing.Refuse(http.StatusBadRequest)

	for _, c := range []struct {
		name    string
		url     string
		lost    int64
		timeout bool
	}{
		{"stalled", stalled, 3, true},
		{"refused", refusing.URL(), 3, false},
		{"taken", rcv.URL(), 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			bg := context.Background()
			s := tracing.Settings{Endpoint: c.url, Timeout: time.Minute, Log: slog.New(slog.DiscardHandler)}
			tp, stopTraces, err := tracing.NewTracerProvider(bg, s)
			if err != nil {
				t.Fatal(err)
			}
			le, stopLogs, err := tracing.NewLogSink(bg, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				_, span := tp.Tracer(tracing.InstrumentationName).Start(bg, "work")
				span.End()
				if err := le.Emit(bg, "telemetry", nil, []byte(`{}`), time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			defer cancel()
			for signal, stop := range map[string]tracing.Shutdown{"traces": stopTraces, "logs": stopLogs} {
				err := stop(ctx)
				var lost *tracing.NotExportedError
				switch {
				case c.lost == 0 && err != nil:
					t.Errorf("%s: Shutdown = %v, want nil", signal, err)
				case c.lost == 0:
				case !errors.As(err, &lost) || lost.Signal != signal || lost.Count != c.lost:
					t.Errorf("%s: Shutdown = %v, want %d not exported", signal, err, c.lost)
				case c.timeout != errors.Is(err, context.DeadlineExceeded):
					t.Errorf("%s: Shutdown = %v, the deadline said: %v", signal, err, c.timeout)
				}
			}
		})
	}
}
