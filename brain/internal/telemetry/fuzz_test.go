package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// captureSink keeps the lines File would write, without a file.
type captureSink struct {
	ch chan Entry
}

func (c *captureSink) Write(_ context.Context, e Entry) error { c.ch <- e; return nil }
func (c *captureSink) Close(context.Context) error            { return nil }

// FuzzRecord: whatever bytes a sender passes, Accept either refuses them
// as not JSON (or not UTF-8) or yields an entry whose line is one UTF-8
// JSON object carrying Brain's origin and the record, equal to what was
// sent.
func FuzzRecord(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"origin":{"kind":"agentloop"},"session_id":"x"}`, "\"a\\nb\"",
		`[1,2,{"a":"\u2028"}]`, `{"a":1}{"b":2}`, "{\"a\":\"\xff\"}", `  7  `, ``, `{"a":` + "\n" + `1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, record []byte) {
		sink := &captureSink{ch: make(chan Entry, 1)}
		p := New(Options{Sink: sink, SessionRate: 1e9, GlobalRate: 1e9, Now: func() time.Time { return time.UnixMilli(5) }})
		defer p.Close(context.Background())
		o := toolOrigin("ses_fuzz")
		err := p.Accept(o, bytes.Clone(record))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v", err)
			}
			if len(record) > 0 && json.Valid(record) && utf8.Valid(record) {
				t.Fatalf("valid JSON %q refused", record)
			}
			return
		}
		if len(record) > DefaultMaxRecordBytes {
			return
		}
		e := <-sink.ch
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(e); err != nil {
			t.Fatalf("encode: %v", err)
		}
		line := buf.Bytes()
		if !utf8.Valid(line) {
			t.Fatalf("line %q is not UTF-8", line)
		}
		if bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("line %q is not one line", line)
		}
		var back Entry
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if back.SessionID != o.SessionID || back.Origin != o.Origin || back.Turn != o.Turn || back.Tool != o.Tool || back.RecordedAtMs != 5 {
			t.Fatalf("origin changed: %+v", back)
		}
		in := record
		if len(bytes.TrimSpace(in)) == 0 {
			in = []byte("null")
		}
		want, werr := decodeAny(in)
		got, gerr := decodeAny(back.Record)
		if werr != nil || gerr != nil {
			t.Fatalf("record %q / %q does not decode: %v, %v", in, back.Record, werr, gerr)
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if !bytes.Equal(wb, gb) {
			t.Fatalf("record %s came back as %s", wb, gb)
		}
	})
}

// decodeAny decodes one JSON value keeping numbers as written (a number
// beyond float64, such as 1E700, is valid JSON and must come back as is).
func decodeAny(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
