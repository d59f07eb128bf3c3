package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// benchRecord is a 1 KiB diagnostic record.
var benchRecord = []byte(`{"step":"probe","detail":"` + strings.Repeat("x", 1000) + `"}`)

// BenchmarkAccept measures what a telemetry call costs the turn that
// sends it: Accept of a 1 KiB record into a pipeline writing a real file
// (written: every record taken; dropped: a session beyond its rate),
// against the baseline of checking and copying the record (json.Compact
// into a fresh buffer), the least any sink must do before answering.
func BenchmarkAccept(b *testing.B) {
	b.Run("baseline-compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			buf.Grow(len(benchRecord))
			if err := json.Compact(&buf, benchRecord); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		rate float64
	}{{"written", 1e12}, {"dropped", 1e-9}} {
		b.Run(tc.name, func(b *testing.B) {
			f, err := OpenFile(filepath.Join(b.TempDir(), "t.jsonl"), 1<<40)
			if err != nil {
				b.Fatal(err)
			}
			p := New(Options{Sink: f, SessionRate: tc.rate, GlobalRate: 1e12, Queue: 1 << 16})
			o := toolOrigin("ses_bench")
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Accept(o, benchRecord); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			p.Close(context.Background())
			s := p.Stats()
			b.ReportMetric(float64(s.Dropped[DropQueueFull])/float64(b.N), "queue_full/op")
		})
	}
}
