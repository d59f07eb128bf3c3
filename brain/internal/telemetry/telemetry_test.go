package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func toolOrigin(session string) Origin {
	return Origin{SessionID: session, Turn: 3, Activation: 4, Origin: api.EventOrigin{Kind: api.OriginTool, Sequence: 7},
		Tool: "read", Environment: "workspace"}
}

// readLines answers the entries of a JSON-lines file, failing on a line
// that is not one JSON object in UTF-8.
func readLines(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if !utf8.Valid(sc.Bytes()) {
			t.Fatalf("line %q is not UTF-8", sc.Bytes())
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not a JSON object: %v", sc.Bytes(), err)
		}
		out = append(out, m)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("file does not end with a newline: %q", data)
	}
	return out
}

// TestFileEntriesCarryBrainOrigin: each record becomes one line with the
// origin Brain gave it; keys in the record that look like an origin stay
// inside the record.
func TestFileEntriesCarryBrainOrigin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "telemetry.jsonl")
	f, err := OpenFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.UnixMilli(1_767_225_600_000)}
	p := New(Options{Sink: f, Now: clk.now})
	forged := `{ "session_id": "ses_forged", "origin": {"kind":"agentloop","sequence":1},
	  "turn": 99, "html": "<b>&</b>", "text": "line\nbreak" }`
	if err := p.Accept(toolOrigin("ses_real"), []byte(forged)); err != nil {
		t.Fatal(err)
	}
	env := api.EnvironmentRef{Name: "box", Sequence: 2}
	ctrl := Origin{SessionID: "ses_real", Origin: api.EventOrigin{Kind: api.OriginEnvironment, Environment: &env}, Environment: "box"}
	if err := p.Accept(ctrl, nil); err != nil {
		t.Fatal(err)
	}
	env.Name = "changed after accept"
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	want := map[string]string{
		"recorded_at_ms": "1767225600000", "session_id": `"ses_real"`, "turn": "3", "activation": "4",
		"origin": `{"kind":"tool","sequence":7}`, "tool": `"read"`, "environment": `"workspace"`,
		"record": `{"session_id":"ses_forged","origin":{"kind":"agentloop","sequence":1},"turn":99,"html":"<b>&</b>","text":"line\nbreak"}`,
	}
	for k, v := range want {
		if got := string(lines[0][k]); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	if len(lines[0]) != len(want) {
		t.Errorf("first line has keys %v", lines[0])
	}
	if got := string(lines[1]["origin"]); got != `{"kind":"environment","environment":{"name":"box","sequence":2}}` {
		t.Errorf("controller origin = %s", got)
	}
	if got := string(lines[1]["record"]); got != "null" {
		t.Errorf("empty record = %s, want null", got)
	}
	if _, ok := lines[1]["turn"]; ok {
		t.Errorf("controller entry has a turn: %v", lines[1])
	}
	if s := p.Stats(); s.Written != 2 || sum(s.Dropped) != 0 {
		t.Errorf("stats %+v", s)
	}
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// TestHostileRecordsAreDroppedAndCounted: oversized and non-JSON records
// and floods beyond the token buckets are dropped with their reasons; a
// flooding session does not use up a quiet one's bucket; buckets refill.
func TestHostileRecordsAreDroppedAndCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	f, err := OpenFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Unix(1000, 0)}
	p := New(Options{Sink: f, Now: clk.now, MaxRecordBytes: 100, SessionRate: 5, GlobalRate: 20})
	if err := p.Accept(toolOrigin("a"), []byte(`"`+strings.Repeat("x", 99)+`"`)); err != nil {
		t.Fatal(err)
	}
	if err := p.Accept(toolOrigin("a"), []byte(`{"x":1`)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a record that is not JSON = %v, want ErrInvalid", err)
	}
	// A session's bucket holds 10; the oversized record took none.
	for range 100 {
		p.Accept(toolOrigin("a"), []byte(`{"flood":true}`))
	}
	for range 10 {
		p.Accept(toolOrigin("b"), []byte(`{"quiet":true}`))
	}
	// The global bucket (40) has 20 left: c gets 10, d the other 10.
	for _, s := range []string{"c", "d"} {
		for range 12 {
			p.Accept(toolOrigin(s), []byte(`{}`))
		}
	}
	clk.add(time.Second) // 5 more tokens for a, 20 for the server
	for range 6 {
		p.Accept(toolOrigin("a"), []byte(`{"later":true}`))
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if s.Dropped[DropOversized] != 1 || s.Dropped[DropInvalid] != 1 || s.Dropped[DropRateGlobal] != 0 {
		t.Errorf("dropped %v, want 1 oversized, 1 invalid, no rate_global", s.Dropped)
	}
	lines := readLines(t, path)
	per := map[string]int{}
	for _, l := range lines {
		var id string
		json.Unmarshal(l["session_id"], &id)
		per[id]++
	}
	// a: 10 at once, 5 a second later; b: its own 10 despite a's flood.
	if per["a"] != 15 || per["b"] != 10 {
		t.Errorf("lines per session %v, want a 15, b 10", per)
	}
	// The server's bucket of 40 took a's 10 and b's 10, leaving 20 for c
	// and d, whose own buckets allow 10 each: none beyond the global.
	if per["c"] != 10 || per["d"] != 10 {
		t.Errorf("lines per session %v, want c 10, d 10", per)
	}
	// a: 90 then 1; c and d: 2 each.
	if s.Dropped[DropRateSession] != 90+2+2+1 {
		t.Errorf("rate_session drops %d, want 95 (%v)", s.Dropped[DropRateSession], s.Dropped)
	}
	if s.Written != uint64(len(lines)) {
		t.Errorf("written %d, lines %d", s.Written, len(lines))
	}
}

// TestGlobalRateBoundsManySessions: sessions each within their own bucket
// together meet the server's.
func TestGlobalRateBoundsManySessions(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	sink := &memSink{}
	p := New(Options{Sink: sink, Now: clk.now, SessionRate: 5, GlobalRate: 10})
	for i := range 10 {
		for range 5 {
			p.Accept(toolOrigin(string(rune('a'+i))), []byte(`1`))
		}
	}
	p.Close(context.Background())
	s := p.Stats()
	if s.Written != 20 || s.Dropped[DropRateGlobal] != 30 || s.Dropped[DropRateSession] != 0 {
		t.Errorf("written %d, dropped %v; want 20 written, 30 rate_global", s.Written, s.Dropped)
	}
}

// memSink keeps entries; block, when set, holds Write until closed.
type memSink struct {
	mu      sync.Mutex
	entries []Entry
	block   chan struct{}
	started chan struct{}
	closed  chan struct{} // closed by Close, when set
}

func (m *memSink) Write(_ context.Context, e Entry) error {
	if m.started != nil {
		select {
		case m.started <- struct{}{}:
		default:
		}
	}
	if m.block != nil {
		<-m.block
	}
	m.mu.Lock()
	m.entries = append(m.entries, e)
	m.mu.Unlock()
	return nil
}

func (m *memSink) Close(context.Context) error {
	if m.closed != nil {
		close(m.closed)
	}
	return nil
}

// TestCloseGivenUpStillClosesTheSink: a Close whose context ends while the
// sink still writes answers the context's error, and the sink is closed
// (what it holds flushed) once it wrote what was queued, instead of never.
func TestCloseGivenUpStillClosesTheSink(t *testing.T) {
	sink := &memSink{block: make(chan struct{}), started: make(chan struct{}, 1), closed: make(chan struct{})}
	p := New(Options{Sink: sink, SessionRate: 1e6, GlobalRate: 1e6})
	p.Accept(toolOrigin("a"), []byte(`1`))
	p.Accept(toolOrigin("a"), []byte(`2`))
	<-sink.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with the sink stuck: %v, want the deadline", err)
	}
	close(sink.block)
	select {
	case <-sink.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the sink was never closed")
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.entries) != 2 {
		t.Errorf("the sink wrote %d entries before its close, want 2", len(sink.entries))
	}
}

// TestAcceptNeverWaitsForTheSink: with the sink stuck, Accept returns at
// once and what the queue cannot hold is dropped as queue_full.
func TestAcceptNeverWaitsForTheSink(t *testing.T) {
	sink := &memSink{block: make(chan struct{}), started: make(chan struct{}, 1)}
	p := New(Options{Sink: sink, Queue: 4, SessionRate: 1e6, GlobalRate: 1e6})
	p.Accept(toolOrigin("a"), []byte(`0`))
	<-sink.started // the writer holds the first entry
	done := make(chan struct{})
	go func() {
		for i := range 20 {
			p.Accept(toolOrigin("a"), []byte(strings.Repeat("1", i+1)))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Accept blocked on a stuck sink")
	}
	if got := p.Stats().Dropped[DropQueueFull]; got != 16 {
		t.Errorf("queue_full drops %d, want 16", got)
	}
	close(sink.block)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(sink.entries) != 5 {
		t.Errorf("%d entries written, want 5", len(sink.entries))
	}
	if err := p.Accept(toolOrigin("a"), []byte(`2`)); err != nil || p.Stats().Dropped[DropClosed] != 1 {
		t.Errorf("after close: %v, %v", err, p.Stats().Dropped)
	}
}

// TestNoSinkCountsDrops: without a sink records are checked and counted.
func TestNoSinkCountsDrops(t *testing.T) {
	p := New(Options{})
	p.Accept(toolOrigin("a"), []byte(`{}`))
	if err := p.Accept(toolOrigin("a"), []byte(`nope`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid = %v", err)
	}
	p.Close(context.Background())
	if s := p.Stats(); s.Dropped[DropNoSink] != 1 || s.Dropped[DropInvalid] != 1 || s.Written != 0 {
		t.Errorf("stats %+v", s)
	}
	var nilp *Pipeline
	if err := nilp.Accept(toolOrigin("a"), []byte(`{}`)); err != nil {
		t.Error(err)
	}
	if err := nilp.Accept(toolOrigin("a"), []byte(`{`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil pipeline, invalid = %v", err)
	}
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
