package tracing_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/internal/otlptest"
)

// tally adds up what a log sink reports.
type tally struct {
	mu                sync.Mutex
	delivered, failed int
}

func (t *tally) report(delivered, failed int) {
	t.mu.Lock()
	t.delivered += delivered
	t.failed += failed
	t.mu.Unlock()
}

func (t *tally) get() (int, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delivered, t.failed
}

// sendLogs emits the records named by bodies to the receiver at url over
// protocol, shuts the sink down and answers what it reported.
func sendLogs(t *testing.T, url, protocol string, bodies ...string) (delivered, failed int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got tally
	le, stop, err := tracing.NewLogSink(ctx, tracing.Settings{Endpoint: url, Protocol: protocol, Insecure: true,
		Timeout: 5 * time.Second}, got.report)
	if err != nil || le == nil {
		t.Fatalf("NewLogSink = %v, %v", le, err)
	}
	for _, b := range bodies {
		if err := le.Emit(ctx, "telemetry", nil, []byte(b), time.Now()); err != nil {
			t.Fatalf("Emit = %v", err)
		}
	}
	_ = stop(ctx) // the export's error, if any, is what the report says
	if err := le.Emit(ctx, "telemetry", nil, []byte("late"), time.Now()); !errors.Is(err, tracing.ErrLogSinkClosed) {
		t.Errorf("Emit after Shutdown = %v, want ErrLogSinkClosed", err)
	}
	return got.get()
}

// TestLogSinkReportsWhatTheReceiverAccepted: the records a log sink took
// are reported delivered only once the receiver accepted them; an export
// the receiver refuses, or that reaches no receiver, reports them failed,
// and an OTLP partial success reports the records it rejected failed and
// the others delivered, over HTTP and gRPC.
func TestLogSinkReportsWhatTheReceiverAccepted(t *testing.T) {
	rejectMarked := func(l otlptest.Log) bool { s, _ := l.Body.(string); return strings.HasPrefix(s, "reject") }
	for _, protocol := range []string{tracing.ProtocolHTTP, tracing.ProtocolGRPC} {
		start := func() *otlptest.Receiver {
			if protocol == tracing.ProtocolHTTP {
				return otlptest.Start()
			}
			r, err := otlptest.StartGRPC()
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		t.Run(protocol, func(t *testing.T) {
			rcv := start()
			defer rcv.Close()
			if d, f := sendLogs(t, rcv.URL(), protocol, "a", "b", "c"); d != 3 || f != 0 {
				t.Errorf("accepted: reported %d delivered, %d failed; want 3, 0", d, f)
			}
			rcv.Refuse(http.StatusBadRequest)
			if d, f := sendLogs(t, rcv.URL(), protocol, "a", "b"); d != 0 || f != 2 {
				t.Errorf("refused: reported %d delivered, %d failed; want 0, 2", d, f)
			}
			rcv.Refuse(0)
			rcv.RejectLogs(rejectMarked)
			if d, f := sendLogs(t, rcv.URL(), protocol, "a", "reject-1", "b", "reject-2", "c"); d != 3 || f != 2 {
				t.Errorf("partial success: reported %d delivered, %d failed; want 3, 2", d, f)
			}
			if n := len(rcv.Logs()); n != 6 {
				t.Errorf("the receiver kept %d records, want 6", n)
			}
			down := rcv.URL()
			rcv.Close()
			if d, f := sendLogs(t, down, protocol, "a", "b"); d != 0 || f != 2 {
				t.Errorf("receiver down: reported %d delivered, %d failed; want 0, 2", d, f)
			}
		})
	}
}

// TestLogSinkShutdownReportsTheUnexported: records still waiting for
// export when Shutdown gives up are reported failed, once.
func TestLogSinkShutdownReportsTheUnexported(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	var got tally
	le, stop, err := tracing.NewLogSink(context.Background(), tracing.Settings{Endpoint: rcv.URL()}, got.report)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := le.Emit(context.Background(), "telemetry", nil, []byte("x"), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = stop(ctx)
	_ = stop(context.Background())
	if d, f := got.get(); d+f != 3 || d > len(rcv.Logs()) {
		t.Errorf("reported %d delivered, %d failed, the receiver has %d; want the 3 records told once, none delivered that it lacks", d, f, len(rcv.Logs()))
	}
}

// TestLogSinkQueueFullRefusesRecords: while the receiver does not answer,
// the records waiting for export fill the queue; then Emit refuses the
// next one (ErrLogQueueFull) instead of dropping an older one unreported,
// and every record it took is reported once the receiver answers.
func TestLogSinkQueueFullRefusesRecords(t *testing.T) {
	release := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()
	var got tally
	ctx := context.Background()
	le, stop, err := tracing.NewLogSink(ctx, tracing.Settings{Endpoint: rcv.URL, Timeout: time.Minute}, got.report)
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for taken = 0; taken < 10000; taken++ {
		if err := le.Emit(ctx, "telemetry", nil, []byte("x"), time.Now()); err != nil {
			if !errors.Is(err, tracing.ErrLogQueueFull) {
				t.Fatalf("Emit = %v, want ErrLogQueueFull", err)
			}
			break
		}
	}
	if taken == 10000 || taken == 0 {
		t.Fatalf("%d records taken by a sink whose receiver does not answer, want a bounded queue", taken)
	}
	close(release)
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	if d, f := got.get(); d != taken || f != 0 {
		t.Errorf("reported %d delivered, %d failed; want the %d taken delivered", d, f, taken)
	}
}
