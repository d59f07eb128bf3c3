package tracing_test

import (
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/internal/otlptest"
)

// TestLargeLogRecordsAreExportedInBoundedRequests: a burst of large
// records (telemetry records take up to 64 KiB each) is not sent as one
// request past what a collector takes (the receiver bounds a request to
// 16 MiB, as collectors bound theirs), which it would refuse as a whole:
// every record is delivered, over HTTP and gRPC.
func TestLargeLogRecordsAreExportedInBoundedRequests(t *testing.T) {
	body := strings.Repeat("x", 60<<10)
	bodies := make([]string, 400) // about 24 MiB
	for i := range bodies {
		bodies[i] = body
	}
	for _, protocol := range []string{tracing.ProtocolHTTP, tracing.ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			var rcv *otlptest.Receiver
			if protocol == tracing.ProtocolHTTP {
				rcv = otlptest.Start()
			} else {
				var err error
				if rcv, err = otlptest.StartGRPC(); err != nil {
					t.Fatal(err)
				}
			}
			defer rcv.Close()
			if d, f := sendLogs(t, rcv.URL(), protocol, bodies...); d != len(bodies) || f != 0 {
				t.Errorf("reported %d delivered, %d failed; want %d, 0", d, f, len(bodies))
			}
			if n := len(rcv.Logs()); n != len(bodies) {
				t.Errorf("the receiver kept %d records, want %d", n, len(bodies))
			}
		})
	}
}
