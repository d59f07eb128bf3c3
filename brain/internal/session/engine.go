package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// Engine runs every session of one journal store.
type Engine struct {
	cfg     Config
	store   journal.Store
	models  model.Opener
	secrets Secrets
	now     func() time.Time

	toolTimeout error // the cause a tool's MaxTool deadline ends it with
	turnTimeout error // the cause a turn's MaxTurn deadline ends it with

	base context.Context // ends on Close; commits and effects derive from it
	stop context.CancelFunc
	work inflight // activations, tools, timers in flight (Close waits)
	// runners runs activations and tool deliveries (see runners).
	runners runners

	mu     sync.Mutex
	live   map[string]*sess
	closed bool

	hub      hub
	schemas  schemaCache
	released released          // guarded by mu
	faults   map[string]string // guarded by mu: why a session's last commit failed in this process
	// unrecorded are the tool calls whose finish could not be recorded
	// (guarded by mu).
	unrecorded unrecordedCalls
	// closers retry, for sessions with subscribers, the close of what a
	// commit that could not be written left open (guarded by mu; see
	// armClose).
	closers map[string]*closeRetry
}

// noteFault remembers that a commit of session id failed to be written
// (journal.ErrWrite), so that the records closing what it left open say
// so instead of blaming a restart. Other errors are not noted.
func (e *Engine) noteFault(id string, err error) {
	if !errors.Is(err, journal.ErrWrite) {
		return
	}
	why := "the journal could not be written"
	var errno syscall.Errno
	if errors.As(err, &errno) {
		why += ": " + errno.Error()
	}
	e.mu.Lock()
	e.faults[id] = why
	e.mu.Unlock()
}

// fault answers the noted fault of session id, if any; clear forgets it.
func (e *Engine) fault(id string, clear bool) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	why := e.faults[id]
	if clear {
		delete(e.faults, id)
	}
	return why
}

// sess is the in-memory state of an active session. mu guards everything
// but refs and loading; lock order is sess.mu before Engine.mu.
type sess struct {
	e    *Engine
	id   string
	refs atomic.Int32 // operations holding the session
	// loading: the session was put in Engine.live by an operation that
	// is reading it from the journal (under mu), and may find it absent.
	loading atomic.Bool

	mu        sync.Mutex
	st        *state
	loadErr   error
	activated bool   // loaded for a write, not only for a read
	ckptAt    uint64 // sequence of the last checkpoint
	act       *activation
	tools     map[uint64]*toolCall
	execs     map[uint64]*execution
	ctrls     map[uint64]*execution // controller contexts of environment operations
	releases  []*turnRelease        // turn-end cleanups waiting for tools
	// holding are the tools whose execution resources are not released
	// yet: open, or closed with their cancel or execute still in flight
	// (whose controller context is still open).
	holding map[uint64]*toolCall
	// envBusy counts environment operations being delivered outside the
	// lock (and turn-end cleanups sent, across their calls); envIdle is
	// closed when it drops to zero. End waits for it before it detaches.
	envBusy int
	envIdle chan struct{}
	waiters map[uint64]chan turnResult
	wake    *time.Timer
	wakeGen uint64 // arming count of wake, told to its callback
	idle    *time.Timer
	client  model.Client
	creds   map[string]string // environment credentials read from Secrets
	targets []Target          // declared environments and their credentials, once all were read
	evicted bool
	// faulted: a commit failed, so the state in memory is ahead of the
	// journal; the session is evicted as soon as nothing runs, whatever
	// its retention, and reloaded from the journal on next use.
	faulted bool
	// unended are the operations, tool calls, activations and turns whose
	// terminal records could not be written (endOpLocked,
	// closeToolLocked, finish), by sequence, with their effect prefix
	// ("activation", "turn"): no one closes them again but a write that
	// finds the session faulted and still running, or an automatic
	// activation about to start (closeUnendedLocked), or its reload.
	unended   map[uint64]string
	deleting  bool  // a Delete is tearing the session's environments down
	replacing int   // calls of methods with effect "replace" in flight: no activation starts
	epoch     int64 // the lease this node runs the session under (Config.Ownership)
	inflight  int   // effects delivered outside the lock (tool cancels)
	// pending are records folded into st but not yet appended: they ride
	// on the next append (see deferLocked).
	pending []journal.Record
	// flushT flushes pending when it fires (armFlushLocked); flushWait
	// is how long it waits.
	flushT    *time.Timer
	flushWait time.Duration
	// pendingRefused is why the store surely refused the last commit that
	// carried pending (refused), nil once pending is appended or cleared;
	// refusedThrough is the last deferred record that commit carried.
	pendingRefused error
	refusedThrough uint64
	// heldRefused is why the store refused the last append of pending
	// (a commit carrying them or their flush), nil once they are
	// appended; heldBytes estimates what pending holds (roomLocked).
	heldRefused error
	heldBytes   int64
	// tally counts the commits of the running turn for the request that
	// started it (nil: none).
	tally *commits.Counter
	// parent is the span of the request submitting the next turn.
	parent trace.SpanContext
}

// New returns an engine over cfg.Store.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: Config.Store is required", ErrInvalid)
	}
	e := &Engine{cfg: cfg, store: cfg.Store, models: cfg.Models, secrets: cfg.Secrets, now: cfg.Now, live: map[string]*sess{}, faults: map[string]string{}}
	if d := cfg.Limits.MaxTool; d > 0 {
		e.toolTimeout = fmt.Errorf("tool exceeded %v: %w", d, ErrTimeout)
	}
	if d := cfg.Limits.MaxTurn; d > 0 {
		e.turnTimeout = fmt.Errorf("turn exceeded %v: %w", d, ErrTimeout)
	}
	if e.models == nil {
		e.models = model.Default()
	}
	if e.secrets == nil {
		e.secrets = NewMemSecrets()
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.cfg.CheckpointEvery == 0 {
		e.cfg.CheckpointEvery = 256
	}
	if e.cfg.ReleasedBytes == 0 {
		e.cfg.ReleasedBytes = DefaultReleasedBytes
	}
	e.released.init(e.cfg.ReleasedBytes)
	e.base, e.stop = context.WithCancel(context.Background())
	e.runners.init(e.base.Done(), maxIdleRunners, runnerIdle)
	e.hub.init()
	return e, nil
}

// Close stops admitting work and waits for running activations and tools
// (also tools that returned and have not finished, and the activations
// their results wake) until ctx ends; then it cancels what remains and
// waits for its records.
// It does not close the store.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	defer e.stopClosers()
	done := e.work.Idle()
	select {
	case <-done:
		e.stop()
		return nil
	case <-ctx.Done():
		e.stop()
		<-done
		return ctx.Err()
	}
}

// Active reports how many sessions are held in memory.
func (e *Engine) Active() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.live)
}

// ValidSessionID reports whether id has the session id shape:
// "ses_" and 20 to 32 ASCII letters and digits.
func ValidSessionID(id string) bool {
	rest, ok := strings.CutPrefix(id, "ses_")
	if !ok || len(rest) < 20 || len(rest) > 32 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// NewSessionID returns a fresh random session id.
func NewSessionID() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "ses_" + string(b)
}

// acquire returns the session, loading (and recovering) it if it is not in
// memory. write marks the session activated (a read-only load is released
// as soon as the read ends). The caller must call release.
func (e *Engine) acquire(ctx context.Context, id string, write bool) (*sess, error) {
	if !ValidSessionID(id) {
		return nil, fmt.Errorf("%w: malformed session id %q", ErrInvalid, id)
	}
	if e.cfg.Ownership != nil && !write {
		if s, ok := e.acquireActive(id); ok {
			return s, nil
		}
		return e.readOnly(ctx, id)
	}
	for {
		var epoch int64
		if write {
			var err error
			if epoch, err = e.own(ctx, id); err != nil {
				return nil, err
			}
		}
		e.mu.Lock()
		if e.closed && write {
			e.mu.Unlock()
			return nil, ErrClosed
		}
		if write {
			// Admitted: Close waits for it until releaseWrite, so that the
			// work it starts is counted before Close can stop waiting.
			e.work.Add(1)
		}
		s := e.live[id]
		if s != nil {
			s.refs.Add(1)
			e.mu.Unlock()
			s.mu.Lock()
			if s.evicted || s.loadErr != nil {
				err := s.loadErr
				s.mu.Unlock()
				s.refs.Add(-1)
				e.unadmit(write)
				if err != nil {
					return nil, err
				}
				continue
			}
			if write && s.faulted && s.idleLocked() {
				// A commit failed while the session was in memory (a full
				// disk) and nothing of it runs now: it is read again from
				// the journal, which closes what that commit left open,
				// before this write runs on it. (Work still running
				// passivates it once done.)
				s.dropLocked(errFaulted)
				s.mu.Unlock()
				s.refs.Add(-1)
				e.unadmit(write)
				continue
			}
			if write && s.faulted {
				// Work of the session still runs, so the write runs on
				// what is in memory: the operations that ended without
				// their end written are closed first, as the reload
				// would. (If writes still fail, so does the write.)
				_ = s.closeUnendedLocked()
			}
			if write && s.epoch != epoch {
				// The lease was lost and taken again: what is in memory
				// may be stale; recover from the journal.
				s.dropLocked(errLeaseLost)
				s.mu.Unlock()
				s.refs.Add(-1)
				e.unadmit(write)
				continue
			}
			if write {
				s.activated = true
			}
			s.mu.Unlock()
			return s, nil
		}
		if write && !e.holds(id, epoch) {
			// Released by a passivation since it was confirmed.
			e.mu.Unlock()
			e.unadmit(write)
			continue
		}
		s = &sess{e: e, id: id, tools: map[uint64]*toolCall{}, execs: map[uint64]*execution{}, waiters: map[uint64]chan turnResult{}}
		s.refs.Add(1)
		s.mu.Lock()
		s.loading.Store(true)
		e.live[id] = s
		kept, client := e.released.take(id)
		e.mu.Unlock()
		s.epoch = epoch
		st, err := e.reactivate(ctx, id, kept)
		if err == nil {
			s.st = st
			if st == kept {
				// The kept projection comes with the model client: no
				// read of the session's sealed key on its next turn.
				s.client = client
			}
			s.ckptAt = st.ckptThrough
			err = s.recoverLocked()
		}
		if err != nil {
			s.loadErr = err
			e.mu.Lock()
			delete(e.live, id)
			// Nothing runs the session here: the lease taken for it (the
			// session may not exist) is given back, not renewed.
			s.releaseLeaseLocked()
			e.mu.Unlock()
			s.loading.Store(false)
			s.mu.Unlock()
			s.refs.Add(-1)
			e.unadmit(write)
			return nil, err
		}
		s.activated = write
		s.loading.Store(false)
		s.mu.Unlock()
		return s, nil
	}
}

// unadmit undoes the admission of a write acquisition that did not
// return its session.
func (e *Engine) unadmit(write bool) {
	if write {
		e.work.Done()
	}
}

// releaseWrite ends a write acquisition: the hold and its admission.
func (s *sess) releaseWrite() {
	s.release()
	s.e.work.Done()
}

// release drops an operation's hold and passivates the session when it is
// quiescent.
func (s *sess) release() {
	s.mu.Lock()
	s.refs.Add(-1)
	s.maybeEvictLocked(false)
	s.mu.Unlock()
}

// releaseRead drops a read's hold. A read leaves an armed idle timer as
// it is: the retention counts from the session's last work, and reads do
// not keep a session in memory.
func (s *sess) releaseRead() {
	s.mu.Lock()
	s.refs.Add(-1)
	if s.idle == nil {
		s.maybeEvictLocked(false)
	}
	s.mu.Unlock()
}

// quiescentLocked reports whether nothing runs for the session and no
// operation holds it.
func (s *sess) quiescentLocked() bool {
	return s.idleLocked() && s.refs.Load() == 0
}

// idleLocked reports whether nothing runs for the session.
func (s *sess) idleLocked() bool {
	return s.act == nil && len(s.tools) == 0 && len(s.holding) == 0 && s.wake == nil && s.inflight == 0
}

// ttlLocked is the session's idle retention: 0 release now, <0 keep.
func (s *sess) ttlLocked() time.Duration {
	if s.st != nil && s.st.Config != nil && s.st.Config.IdleTTLMs != nil {
		ms := *s.st.Config.IdleTTLMs
		if ms == 0 || ms > int64(math.MaxInt64/time.Millisecond) {
			// Zero keeps the session; so does an interval longer than a
			// Duration holds.
			return KeepIdle
		}
		return time.Duration(ms) * time.Millisecond
	}
	return s.e.cfg.IdleTTL
}

// maybeEvictLocked passivates the session if it is quiescent and its idle
// policy allows; expired forces release after an idle TTL.
func (s *sess) maybeEvictLocked(expired bool) {
	if s.evicted || !s.quiescentLocked() {
		return
	}
	s.evictFlushedLocked(expired, s.flushLocked())
}

// evictFlushedLocked is maybeEvictLocked for a quiescent session whose
// deferred records were just flushed with result flushErr: a flush the
// journal refused keeps a session that is not faulted in memory.
func (s *sess) evictFlushedLocked(expired bool, flushErr error) {
	expired = expired || s.faulted
	if flushErr != nil && !s.faulted {
		return
	}
	ttl := s.ttlLocked()
	// An ended session, or one whose creation failed, never runs again:
	// there is no execution to retain.
	if s.activated && !expired && s.st != nil && s.st.Status != api.StatusEnded && s.st.Status != api.StatusFailed {
		switch {
		case ttl < 0:
			return
		case ttl > 0:
			if s.idle != nil {
				s.idle.Stop()
			}
			s.idle = time.AfterFunc(ttl, func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.idle = nil
				s.maybeEvictLocked(true)
			})
			return
		}
	}
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	// A faulted session's projection, or one holding records the journal
	// refused, reaches past the journal's end: the stores refuse a
	// checkpoint through it.
	if !s.faulted && len(s.pending) == 0 {
		s.checkpointLocked()
	}
	e := s.e
	size := int64(0)
	if s.st != nil && e.cfg.ReleasedBytes > 0 {
		size = s.st.heapBytes()
	}
	e.mu.Lock()
	if e.live[s.id] == s && s.refs.Load() == 0 {
		delete(e.live, s.id)
		s.evicted = true
		// Under e.mu, so that an acquire creating the session anew
		// finds the lease gone and takes another.
		s.releaseLeaseLocked()
		// The projection is kept only when it is what the journal
		// holds. A faulted session's may hold records never written
		// (deferred ones, folded at once): reused because the journal
		// ends where it does, it would take back a state another
		// writer's records may have reached the same length as.
		if s.st != nil && !s.faulted && len(s.pending) == 0 {
			s.st.ckptThrough = s.ckptAt
			e.released.put(s.id, s.st, s.client, size)
		}
	}
	e.mu.Unlock()
	if s.evicted {
		s.st, s.client = nil, nil
	}
}

// commitLocked durably appends records at the session's next sequence and
// folds them. Deferred records (deferLocked) go first in the same append,
// so one flush makes them all durable. It answers the first sequence of
// recs. Commits use the engine's context so that a cancelled caller still
// records its outcome.
func (s *sess) commitLocked(recs ...journal.Record) (uint64, error) {
	if s.st == nil {
		return 0, fmt.Errorf("session %s: %w", s.id, ErrClosed)
	}
	first := s.stampLocked(recs)
	batch, from := recs, first
	if len(s.pending) > 0 {
		batch = append(s.pending[:len(s.pending):len(s.pending)], recs...)
		from = s.pending[0].Sequence
	}
	if err := s.leasedLocked(); err != nil {
		return 0, fmt.Errorf("session %s: commit %s: %w", s.id, recs[0].Kind, err)
	}
	if err := s.e.store.Append(context.WithoutCancel(s.e.base), s.id, from, batch); err != nil {
		s.e.noteFault(s.id, err)
		if len(s.pending) > 0 && refused(err) {
			s.pendingRefused = err
			s.refusedThrough = s.pending[len(s.pending)-1].Sequence
			s.heldRefused = err
		}
		if refused(err) {
			s.e.armClose(s.id)
		}
		return 0, fmt.Errorf("session %s: commit %s: %w", s.id, recs[0].Kind, err)
	}
	s.tally.Add(1)
	s.clearPendingLocked()
	for _, r := range recs {
		if err := s.st.apply(r); err != nil {
			return 0, err
		}
	}
	return first, nil
}

// stampLocked gives recs their sequences (after any deferred records) and
// recording time, and answers the first sequence.
func (s *sess) stampLocked(recs []journal.Record) uint64 {
	first := s.st.Next
	now := s.e.now().UnixMilli()
	if now < s.st.LastAtMs {
		now = s.st.LastAtMs
	}
	for i := range recs {
		recs[i].Sequence = first + uint64(i)
		recs[i].RecordedAtMs = now
	}
	return first
}

// deferLocked folds records at the session's next sequences without
// appending them: they are appended, in order, with the next commit, by
// flushLocked, or at the latest CoalesceWindow later. Only records that no
// effect depends on and that nobody outside the engine has been answered
// about are deferred: the terminal records of an in-process call
// (model_call_ended, tool_call_ended of a synchronous phase) and the
// loop's state changes. Every *_started fence, every answer to a caller
// (turn end, callbacks over Call) and every read of the session flushes
// them first, so nothing outside observes a record before it is durable.
func (s *sess) deferLocked(recs ...journal.Record) (uint64, error) {
	return s.deferFoldLocked(recs, nil)
}

// deferRefLocked is deferLocked for one record the engine built
// referencing record ref (an effect's end): its fold takes ref as given.
func (s *sess) deferRefLocked(r journal.Record, ref uint64) (uint64, error) {
	return s.deferFoldLocked([]journal.Record{r}, &known{ref: ref, hasRef: true})
}

// deferDeltaLocked is deferLocked for the transcript_delta the engine
// built from d: its fold takes d as given when d's appended messages are
// what the journal's fold would decode (canonicalMessages).
func (s *sess) deferDeltaLocked(d transcriptDelta) (uint64, error) {
	r := rec(api.KindTranscriptDelta, d)
	if !canonicalMessages(d.Append) {
		return s.deferFoldLocked([]journal.Record{r}, nil)
	}
	d.Append = cloneBlocks(d.Append)
	return s.deferFoldLocked([]journal.Record{r}, &known{delta: &d})
}

// deferFoldLocked defers recs, folding each with what is known of them
// when k is not nil.
func (s *sess) deferFoldLocked(recs []journal.Record, k *known) (uint64, error) {
	if s.st == nil {
		return 0, fmt.Errorf("session %s: %w", s.id, ErrClosed)
	}
	first := s.stampLocked(recs)
	for _, r := range recs {
		if err := s.st.fold(r, k); err != nil {
			return 0, err
		}
		s.pending = append(s.pending, r)
		s.heldBytes += heldRecordBytes + int64(len(r.Data)+len(r.Origin))
	}
	if s.flushT == nil {
		s.flushWait = CoalesceWindow
		s.armFlushLocked()
	}
	return first, nil
}

// maxHeldBytes bounds the deferred records a session holds in memory
// while the journal refuses them: past it, a loop's KV write or
// transcript save is answered the journal's error (ErrUnavailable)
// unless the records held can be appended then. heldRecordBytes is what
// a record holds besides its data.
const (
	maxHeldBytes    = 16 << 20
	heldRecordBytes = 256
)

// roomLocked answers whether a loop's state change may be deferred:
// always, unless the store refused the records already held and they
// reach maxHeldBytes; then they are appended first, and when the store
// refuses them still, the change is refused (nothing of it is done) with
// ErrUnavailable wrapping the journal's error. A loop that writes
// without any model or tool call so holds no more than the bound while
// the journal refuses it, however long its turn.
func (s *sess) roomLocked() error {
	if s.heldRefused == nil || s.heldBytes < maxHeldBytes {
		return nil
	}
	through := s.pending[len(s.pending)-1].Sequence
	if err := s.flushLocked(); err != nil {
		if refused(err) {
			// The loop is answered the refusal, as for a commit: a
			// riding turn whose start it carried is undone (finish).
			s.pendingRefused, s.refusedThrough = err, through
			return fmt.Errorf("%w: %d bytes of records wait for the journal: %w", ErrUnavailable, s.heldBytes, err)
		}
		return err
	}
	return nil
}

// maxFlushWait bounds how long a refused flush of deferred records waits
// before it is tried again.
const maxFlushWait = time.Second

// armFlushLocked starts the timer that appends the deferred records after
// s.flushWait. A flush the store refused (a full disk: nothing was
// written) is tried again, waiting twice as long each time up to
// maxFlushWait, so that the records become durable once the fault passed
// even when no other commit of the session comes.
func (s *sess) armFlushLocked() {
	var t *time.Timer
	t = time.AfterFunc(s.flushWait, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.flushT != t {
			return // stopped, or replaced by a later timer
		}
		s.flushT = nil
		err := s.appendPendingLocked()
		// The eviction check takes this flush's result: a refused flush
		// is tried again by the next timer, not at once.
		if !s.evicted && s.quiescentLocked() {
			s.evictFlushedLocked(false, err)
		}
		if err != nil && refused(err) && len(s.pending) > 0 && s.st != nil && !s.evicted && s.flushT == nil {
			s.flushWait = min(2*s.flushWait, maxFlushWait)
			s.armFlushLocked()
		}
	})
	s.flushT = t
}

// flushLocked appends the deferred records for a caller that waits on
// them (the running turn's request counts the commit).
func (s *sess) flushLocked() error {
	if len(s.pending) == 0 || s.st == nil {
		return nil
	}
	if err := s.appendPendingLocked(); err != nil {
		return err
	}
	s.tally.Add(1)
	return nil
}

// appendPendingLocked appends the deferred records. The coalescing timer
// calls it directly: that flush runs beside the turn, which does not wait
// on it, so no request counts it.
func (s *sess) appendPendingLocked() error {
	if len(s.pending) == 0 || s.st == nil {
		return nil
	}
	batch := s.pending
	if err := s.leasedLocked(); err != nil {
		return fmt.Errorf("session %s: commit %s: %w", s.id, batch[0].Kind, err)
	}
	if err := s.e.store.Append(context.WithoutCancel(s.e.base), s.id, batch[0].Sequence, batch); err != nil {
		s.e.noteFault(s.id, err)
		if refused(err) {
			s.heldRefused = err
		}
		return fmt.Errorf("session %s: commit %s: %w", s.id, batch[0].Kind, err)
	}
	s.clearPendingLocked()
	return nil
}

func (s *sess) clearPendingLocked() {
	s.pending = nil
	s.pendingRefused = nil
	s.refusedThrough = 0
	s.heldRefused = nil
	s.heldBytes = 0
	if s.flushT != nil {
		s.flushT.Stop()
		s.flushT = nil
	}
}

// flush appends the session's deferred records.
func (s *sess) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked()
}

func (s *sess) summaryLocked() api.SessionSummary {
	return api.SessionSummary{SessionID: s.id, Status: s.st.Status, LastSequence: s.st.last()}
}

// loop resolves the session's agentloop; a resolution that waits ends
// with ctx.
func (e *Engine) loop(ctx context.Context, a *api.Agentloop) (agentloop.Func, error) {
	if a == nil || isBuiltin(a.Implementation) {
		if e.cfg.Loops == nil {
			return agentloop.Default, nil
		}
		// The resolver decides whether the built-in loop runs natively or
		// as its Wasm build.
		impl := builtinImplementation
		if a != nil && len(a.Implementation) > 0 {
			impl = a.Implementation
		}
		return e.cfg.Loops(ctx, impl)
	}
	if e.cfg.Loops == nil {
		return nil, fmt.Errorf("%w: agentloop implementation %s", ErrUnsupported, a.Implementation)
	}
	return e.cfg.Loops(ctx, a.Implementation)
}

// modelLocked opens the session's model client once.
func (s *sess) modelLocked(ctx context.Context) (model.Client, error) {
	if s.client != nil {
		return s.client, nil
	}
	m := s.st.Config.Model
	key, err := s.e.secrets.Get(ctx, s.id, SecretModelAPIKey)
	if err != nil {
		return nil, fmt.Errorf("session %s: model key: %w", s.id, err)
	}
	c, err := s.e.models.Open(model.Spec{Provider: m.Provider, Name: m.Name, APIKey: string(key)})
	if err != nil {
		return nil, err
	}
	s.client = c
	return c, nil
}

func isNotFound(err error) bool {
	return errors.Is(err, journal.ErrNotFound) || errors.Is(err, ErrNotFound)
}

// builtinImplementation names the built-in default loop.
var builtinImplementation = []byte(api.BuiltinDefaultImplementation)

// isBuiltin reports whether an implementation names the built-in loop.
// The form sessions are created with is recognised without decoding: it is
// asked on every turn.
func isBuiltin(impl []byte) bool {
	if bytes.Equal(impl, builtinImplementation) {
		return true
	}
	var d struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(impl, &d) != nil {
		return false
	}
	return d.Type == api.ImplementationBuiltin && (d.Name == api.BuiltinDefaultLoop || d.Name == "")
}

// lockLive locks an acquired session for an operation. Delete drops the
// state of a session that other callers may hold already: their operation
// then finds the session gone (ErrNotFound), as if it had come later.
func (s *sess) lockLive() error {
	s.mu.Lock()
	if s.st == nil {
		s.mu.Unlock()
		return fmt.Errorf("session %s: %w", s.id, ErrNotFound)
	}
	return nil
}
