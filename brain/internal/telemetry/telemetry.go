package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

// ErrInvalid is the error Accept answers for a record that is not JSON,
// or not UTF-8 (as JSON text must be).
var ErrInvalid = errors.New("telemetry record is not JSON")

// Origin is what Brain knows about the sender of a record. The sender
// cannot set any of it.
type Origin struct {
	SessionID string
	// Turn is the turn_started sequence (0 for an event-triggered
	// activation).
	Turn uint64
	// Activation is the activation_started sequence (0 outside one).
	Activation uint64
	// Origin is the sender: an agentloop activation, a tool call or an
	// environment's controller context.
	Origin api.EventOrigin
	// Tool and Environment name a tool call and its environment.
	Tool        string
	Environment string
}

// Entry is one accepted record with its origin.
type Entry struct {
	RecordedAtMs int64           `json:"recorded_at_ms"`
	SessionID    string          `json:"session_id"`
	Turn         uint64          `json:"turn,omitempty"`
	Activation   uint64          `json:"activation,omitempty"`
	Origin       api.EventOrigin `json:"origin"`
	Tool         string          `json:"tool,omitempty"`
	Environment  string          `json:"environment,omitempty"`
	// Record is the record as sent, compacted JSON.
	Record json.RawMessage `json:"record"`
}

// Sink receives accepted entries. Write is called from one goroutine at a
// time and should not hold on to e.Record after it returns; an error
// counts the entry as dropped (write_error). Close is called once, after
// the last Write.
type Sink interface {
	Write(ctx context.Context, e Entry) error
	Close(ctx context.Context) error
}

// AsyncSink is a Sink that learns only later whether the entries it took
// were delivered (an exporter that batches them to a receiver). Its Write
// answers nil for an entry it took, which the pipeline counts neither
// written nor dropped until the sink reports what became of it; an error
// drops the entry at once (write_error). New calls ReportTo once, before
// the first Write, with the function the sink reports through: delivered
// entries count as written, failed ones as dropped (write_error). Every
// entry taken is reported by the time Close returns.
type AsyncSink interface {
	Sink
	ReportTo(report func(delivered, failed int))
}

// Drop reasons, the label values of the dropped counter.
const (
	DropOversized   = "oversized"
	DropInvalid     = "invalid"
	DropRateSession = "rate_session"
	DropRateGlobal  = "rate_global"
	DropQueueFull   = "queue_full"
	DropWriteError  = "write_error"
	DropNoSink      = "no_sink"
	DropClosed      = "closed"
)

// Reasons answers every drop reason.
func Reasons() []string { return slices.Clone(reasonsArr[:]) }

// Defaults of Options.
const (
	DefaultMaxRecordBytes = 64 << 10
	DefaultSessionRate    = 50
	DefaultGlobalRate     = 1000
	DefaultQueue          = 1024
)

// Options configure a Pipeline. Zero fields select the defaults.
type Options struct {
	// Sink receives the entries; nil drops every record (no_sink).
	Sink Sink
	// MaxRecordBytes bounds one record as sent (0: 64 KiB).
	MaxRecordBytes int
	// SessionRate and GlobalRate are token-bucket rates in records per
	// second, per session and for the whole server; a bucket holds two
	// seconds' worth (0: 50 and 1000).
	SessionRate float64
	GlobalRate  float64
	// Queue is how many entries may wait for the writer (0: 1024).
	Queue int
	// Logger is told of sink failures, at most once per failure spell
	// and at most once a minute, with the count of the spells not told
	// (nil: slog.Default()).
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Pipeline bounds, queues and writes records. Its methods are safe for
// concurrent use; a nil *Pipeline checks records and drops them.
type Pipeline struct {
	opts    Options
	limits  *limiter
	queue   chan Entry
	done    chan struct{}
	mu      sync.RWMutex // guards closed against sends on queue
	closed  bool
	written atomic.Uint64
	pending atomic.Int64 // entries an AsyncSink took and has not reported
	dropped [len(reasonsArr)]atomic.Uint64

	logMu    sync.Mutex
	failing  bool      // the sink failed last
	said     bool      // the failure spell under way was logged
	warnedAt time.Time // when a failure spell was last logged
	unsaid   int       // failure spells begun since then and not logged
}

// failLogEvery spaces the warnings of the sink's failure spells: a sink
// that fails and recovers over and over (a collector slower than the
// records, a disk nearly full) is said at most once in that time, with
// the count of the spells not said.
const failLogEvery = time.Minute

var reasonsArr = [...]string{DropOversized, DropInvalid, DropRateSession, DropRateGlobal, DropQueueFull, DropWriteError, DropNoSink, DropClosed}

func reasonIndex(r string) int {
	for i, x := range reasonsArr {
		if x == r {
			return i
		}
	}
	panic("telemetry: unknown drop reason " + r)
}

// New starts a pipeline and its writer goroutine; Close stops it.
func New(opts Options) *Pipeline {
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if opts.SessionRate <= 0 {
		opts.SessionRate = DefaultSessionRate
	}
	if opts.GlobalRate <= 0 {
		opts.GlobalRate = DefaultGlobalRate
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &Pipeline{opts: opts, limits: newLimiter(opts.SessionRate, opts.GlobalRate, opts.Now),
		queue: make(chan Entry, opts.Queue), done: make(chan struct{})}
	if as, ok := opts.Sink.(AsyncSink); ok {
		as.ReportTo(p.settle)
	}
	go p.write()
	return p
}

// Accept takes one record from the sender at o. It never blocks on the
// sink: a record beyond a bound, or one the writer has no room for, is
// dropped and counted. Only a record that is not JSON is refused, with an
// error wrapping ErrInvalid: one whose bytes are not UTF-8 is not JSON
// either (encoding/json would take them into the entry as they are).
func (p *Pipeline) Accept(o Origin, record []byte) error {
	max := DefaultMaxRecordBytes
	if p != nil {
		max = p.opts.MaxRecordBytes
	}
	if len(record) > max {
		p.drop(DropOversized)
		return nil
	}
	if len(record) == 0 {
		record = []byte("null")
	}
	if !utf8.Valid(record) {
		p.drop(DropInvalid)
		return fmt.Errorf("%w: it is not valid UTF-8", ErrInvalid)
	}
	var buf bytes.Buffer
	buf.Grow(len(record))
	if err := json.Compact(&buf, record); err != nil {
		p.drop(DropInvalid)
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if p == nil || p.opts.Sink == nil {
		p.drop(DropNoSink)
		return nil
	}
	if reason := p.limits.allow(o.SessionID); reason != "" {
		p.drop(reason)
		return nil
	}
	e := Entry{RecordedAtMs: p.opts.Now().UnixMilli(), SessionID: o.SessionID, Turn: o.Turn, Activation: o.Activation,
		Origin: o.Origin, Tool: o.Tool, Environment: o.Environment, Record: buf.Bytes()}
	if e.Origin.Environment != nil {
		ref := *e.Origin.Environment
		e.Origin.Environment = &ref
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		p.drop(DropClosed)
		return nil
	}
	select {
	case p.queue <- e:
	default:
		p.drop(DropQueueFull)
	}
	return nil
}

func (p *Pipeline) drop(reason string) {
	if p != nil {
		p.dropped[reasonIndex(reason)].Add(1)
	}
}

func (p *Pipeline) write() {
	defer close(p.done)
	ctx := context.Background()
	_, async := p.opts.Sink.(AsyncSink)
	for e := range p.queue {
		if p.opts.Sink == nil {
			continue
		}
		if async {
			// Counted before Write: the sink may report the entry
			// before Write returns.
			p.pending.Add(1)
		}
		if err := p.opts.Sink.Write(ctx, e); err != nil {
			if async {
				p.pending.Add(-1)
			}
			p.drop(DropWriteError)
			p.failed(err)
			continue
		}
		if async {
			continue
		}
		p.recovered()
		p.written.Add(1)
	}
}

// settle counts the entries an AsyncSink reports.
func (p *Pipeline) settle(delivered, failed int) {
	p.pending.Add(-int64(delivered + failed))
	if failed > 0 {
		p.dropped[reasonIndex(DropWriteError)].Add(uint64(failed))
		p.failed(nil)
	} else if delivered > 0 {
		p.recovered()
	}
	p.written.Add(uint64(delivered))
}

// failed logs the first failure of a spell, unless a spell was logged
// less than failLogEvery before; a spell not logged then is logged by its
// first failure past that time. err is nil when the sink reported entries
// it could not deliver.
func (p *Pipeline) failed(err error) {
	p.logMu.Lock()
	now := p.opts.Now()
	recent := !p.warnedAt.IsZero() && now.Sub(p.warnedAt) < failLogEvery
	switch {
	case !p.failing:
		p.failing, p.said = true, false
		if recent {
			p.unsaid++
			p.logMu.Unlock()
			return
		}
	case p.said || recent:
		p.logMu.Unlock()
		return
	default:
		p.unsaid-- // the spell under way, not logged when it began, is now
	}
	unsaid := p.unsaid
	p.said, p.warnedAt, p.unsaid = true, now, 0
	p.logMu.Unlock()
	args := []any{"failure_spells_not_logged", unsaid}
	if err == nil {
		p.opts.Logger.Warn("telemetry sink could not deliver records; they are dropped until it recovers", args...)
		return
	}
	p.opts.Logger.Warn("telemetry sink failed; records are dropped until it recovers", append([]any{"error", err}, args...)...)
}

// recovered ends a failure spell, and says so when the spell was logged.
func (p *Pipeline) recovered() {
	p.logMu.Lock()
	said := p.failing && p.said
	p.failing, p.said = false, false
	p.logMu.Unlock()
	if said {
		p.opts.Logger.Info("telemetry sink recovered")
	}
}

// Close stops taking records, writes those queued and closes the sink.
// When ctx ends first it answers ctx's error at once, and the sink is
// closed once the queue is written.
func (p *Pipeline) Close(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.queue)
	p.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		if p.opts.Sink != nil {
			// The caller stops waiting; the sink is still closed (what
			// it holds flushed) once the queue is written.
			go func() {
				<-p.done
				_ = p.opts.Sink.Close(context.WithoutCancel(ctx))
			}()
		}
		return fmt.Errorf("telemetry: close: %w", ctx.Err())
	}
	if p.opts.Sink == nil {
		return nil
	}
	return p.opts.Sink.Close(ctx)
}

// Stats are the pipeline's counters since it started.
type Stats struct {
	// Written counts the entries the sink took: for an AsyncSink, those
	// it reported delivered.
	Written uint64
	// Pending counts the entries an AsyncSink took whose delivery it has
	// not reported yet.
	Pending uint64
	// Dropped counts the records dropped, by reason.
	Dropped map[string]uint64
}

// Stats answers the counters.
func (p *Pipeline) Stats() Stats {
	s := Stats{Dropped: make(map[string]uint64, len(reasonsArr))}
	for i, r := range reasonsArr {
		if p != nil {
			s.Dropped[r] = p.dropped[i].Load()
		} else {
			s.Dropped[r] = 0
		}
	}
	if p != nil {
		s.Written = p.written.Load()
		s.Pending = uint64(max(p.pending.Load(), 0))
	}
	return s
}
