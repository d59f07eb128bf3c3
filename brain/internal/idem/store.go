package idem

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// Errors of this package.
var (
	ErrConflict   = errors.New("idem: idempotency key was used with a different request")
	ErrAmbiguous  = errors.New("idem: a request with this idempotency key was claimed but its answer was never recorded")
	ErrInvalidKey = errors.New("idem: invalid idempotency key")
	ErrDamaged    = errors.New("idem: requests log is damaged")
	ErrClosed     = errors.New("idem: store is closed")
	// ErrWrite wraps a failed write or flush of the requests log: the
	// disk is full or failing. It does not stick: the next use after one
	// rewrites the log from memory (see doc.go) and goes on once that
	// succeeds.
	ErrWrite = errors.New("idem: requests log write failed")
)

// compactMinBytes is the smallest file the running store compacts.
const compactMinBytes = 1 << 20

// Options configures a Store. The zero value keeps answers forever.
type Options struct {
	// Retention is how long an entry is kept after its last record; zero
	// keeps entries forever.
	Retention time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Derive, if set, is asked during Open for the answer of each claim
	// made with ClaimHinted that has no recorded answer (its process ended
	// before the answer written by AnswerDerivable was durable). It
	// answers ok only when the answer follows from the hint and from state
	// that is durable elsewhere; otherwise the claim stays ambiguous. With
	// no Derive every such claim stays ambiguous. Either way the outcome
	// is durable before Open returns and the hint is forgotten.
	Derive func(scope, key string, hint []byte) (a Answer, ok bool)
}

// Answer is a recorded HTTP answer.
type Answer struct {
	Status int
	Body   []byte
}

type entryKey struct{ scope, key string }

type entry struct {
	digest   [digestBytes]byte
	atMs     int64
	claimAt  int64
	answered bool
	answer   Answer
	released bool          // a release record is written
	hint     []byte        // a hinted claim's hint (kept until answered)
	done     chan struct{} // open while this process runs the claimed request
	// riding: a ClaimRiding claim whose claim record the journal has not
	// made durable yet (nothing of it is written here).
	riding bool
	// journaledAnswer: the answer was made durable by the journal.
	journaledAnswer bool
	onDurable       func() // run once a riding claim is durable
}

// Store is the durable idempotency store of one data directory.
type Store struct {
	path string
	opts Options

	mu      sync.Mutex
	cond    *sync.Cond
	f       *os.File
	entries map[entryKey]*entry
	size    int64 // bytes in the file
	checkAt int64 // the size at which the running store next weighs a compaction
	written uint64
	synced  uint64
	syncing bool
	err     error // write/sync failure not yet recovered (see recoverLocked)
	closed  bool
	lost    bool // Journaled was called after Close
	// pend holds frames Journaled folded but has not written yet: they
	// go out together, ahead of any other frame (see writeLocked).
	pend []byte
}

// pendFlushBytes is how many bytes of Journaled frames are held before
// they are written without waiting for another reason to write.
const pendFlushBytes = 64 << 10

// Digest returns the SHA-256 digest of a request described by parts; each
// part is length-prefixed so that no two part lists collide.
func Digest(parts ...[]byte) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// Open opens (creating if needed) the requests log at path, recovering and
// compacting it as doc.go describes.
func Open(path string, opts *Options) (*Store, error) {
	return openStore(path, opts, true)
}

// openStore opens the log; settle resolves hinted claims and compacts, as Open
// does (RecoverJournaled only appends).
func openStore(path string, opts *Options, settle bool) (*Store, error) {
	s := &Store{path: path, entries: map[entryKey]*entry{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	s.cond = sync.NewCond(&s.mu)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("idem: open %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("idem: open %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("idem: read %s: %w", path, err)
	}
	s.f = f
	good, err := s.load(data)
	if err != nil {
		f.Close()
		return nil, err
	}
	if good < len(data) {
		if err := f.Truncate(int64(good)); err != nil {
			f.Close()
			return nil, fmt.Errorf("idem: cut torn tail of %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("idem: sync %s: %w", path, err)
		}
	}
	s.size = int64(good)
	if !settle {
		return s, nil
	}
	resolved := s.resolveHints()
	if resolved || s.size != s.liveBytes() {
		if err := s.compactLocked(); err != nil {
			s.f.Close()
			return nil, err
		}
	}
	if err := fsutil.SyncDir(filepath.Dir(path)); err != nil {
		s.f.Close()
		return nil, err
	}
	return s, nil
}

// load folds the records of data and answers how many bytes hold complete
// frames.
func (s *Store) load(data []byte) (int, error) {
	off := 0
	for off < len(data) {
		r, n, st := nextFrame(data[off:])
		switch st {
		case frameIncomplete:
			return off, nil
		case frameDamaged:
			return 0, fmt.Errorf("%w: %s: bad frame at offset %d", ErrDamaged, s.path, off)
		}
		s.apply(r)
		off += n
	}
	now := s.opts.Now().UnixMilli()
	for k, e := range s.entries {
		if s.expired(e, now) {
			delete(s.entries, k)
		}
	}
	return off, nil
}

// resolveHints settles every hinted claim left without an answer, through
// Options.Derive, and reports whether there was any.
func (s *Store) resolveHints() bool {
	any := false
	now := s.opts.Now().UnixMilli()
	for k, e := range s.entries {
		if e.hint == nil {
			continue
		}
		any = true
		if !e.answered && s.opts.Derive != nil {
			if a, ok := s.opts.Derive(k.scope, k.key, e.hint); ok {
				e.answered, e.answer, e.atMs = true, Answer{Status: a.Status, Body: append([]byte(nil), a.Body...)}, now
			}
		}
		e.hint = nil
	}
	return any
}

// apply folds one record read back from the file.
func (s *Store) apply(r record) {
	k := entryKey{r.Scope, r.Key}
	switch r.Type {
	case typeClaim:
		if e := s.entries[k]; e != nil && e.digest == r.Digest && e.claimAt == r.AtMs {
			return // the same claim again (a journaled claim recovered twice)
		}
		s.entries[k] = &entry{digest: r.Digest, atMs: r.AtMs, claimAt: r.AtMs}
	case typeHinted:
		s.entries[k] = &entry{digest: r.Digest, atMs: r.AtMs, claimAt: r.AtMs, hint: r.Hint}
	case typeAnswer:
		if e := s.entries[k]; e != nil && !e.answered {
			e.answered, e.answer, e.atMs = true, Answer{Status: r.Status, Body: r.Body}, r.AtMs
		}
	case typeRelease:
		delete(s.entries, k)
	}
}

func (s *Store) expired(e *entry, nowMs int64) bool {
	return s.opts.Retention > 0 && e.done == nil && nowMs-e.atMs > s.opts.Retention.Milliseconds()
}

// Claim claims (scope, key) for a request with digest. It answers a Claim
// when the request should run now, or the recorded Answer to replay. It
// fails with ErrConflict for a different request under the same key and
// ErrAmbiguous for a claim an earlier process never answered. A claim the
// same process is still running is awaited until ctx ends.
func (s *Store) Claim(ctx context.Context, scope, key string, digest [32]byte) (*Claim, *Answer, error) {
	return s.claim(ctx, &record{Type: typeClaim, Scope: scope, Key: key, Digest: digest}, false)
}

// ClaimHinted is Claim with a hint (1..MaxHintBytes bytes) recorded in
// the claim: what Options.Derive needs to find the request's answer in
// state kept elsewhere if the process ends before the answer recorded by
// Claim.AnswerDerivable is durable.
func (s *Store) ClaimHinted(ctx context.Context, scope, key string, digest [32]byte, hint []byte) (*Claim, *Answer, error) {
	return s.claim(ctx, &record{Type: typeHinted, Scope: scope, Key: key, Digest: digest, Hint: append([]byte(nil), hint...)}, false)
}

// claim claims r's key; a riding claim is not written (see ClaimRiding).
func (s *Store) claim(ctx context.Context, r *record, riding bool) (*Claim, *Answer, error) {
	scope, key, digest := r.Scope, r.Key, r.Digest
	if err := checkRecord(r); err != nil {
		return nil, nil, err
	}
	k := entryKey{scope, key}
	for {
		s.mu.Lock()
		if err := s.usableLocked(); err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
		now := s.opts.Now().UnixMilli()
		e := s.entries[k]
		if e != nil && s.expired(e, now) {
			delete(s.entries, k)
			e = nil
		}
		if e != nil {
			switch {
			case e.digest != digest:
				s.mu.Unlock()
				return nil, nil, ErrConflict
			case e.done != nil:
				done := e.done
				s.mu.Unlock()
				select {
				case <-done:
					continue
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			case e.answered:
				a := Answer{Status: e.answer.Status, Body: append([]byte(nil), e.answer.Body...)}
				s.mu.Unlock()
				return nil, &a, nil
			}
			s.mu.Unlock()
			return nil, nil, ErrAmbiguous
		}
		r.AtMs = now
		e = &entry{digest: digest, atMs: now, claimAt: now, hint: r.Hint, done: make(chan struct{}), riding: riding}
		s.entries[k] = e
		if riding {
			s.mu.Unlock()
			return &Claim{s: s, k: k, e: e, tally: commits.From(ctx)}, nil, nil
		}
		n, err := s.writeLocked(r)
		s.mu.Unlock()
		if err == nil {
			err = s.waitSync(n)
		}
		if err != nil {
			s.mu.Lock()
			if s.entries[k] == e {
				delete(s.entries, k)
			}
			close(e.done)
			e.done = nil
			s.mu.Unlock()
			return nil, nil, err
		}
		tally := commits.From(ctx)
		tally.Add(1)
		return &Claim{s: s, k: k, e: e, hinted: r.Type == typeHinted, tally: tally}, nil, nil
	}
}

// usableLocked reports why the store cannot be used, if it cannot. After
// a failed write or flush it first tries to recover.
func (s *Store) usableLocked() error {
	if s.closed {
		return ErrClosed
	}
	if s.err != nil {
		s.recoverLocked()
	}
	return s.err
}

// recoverLocked clears a write or flush failure by rewriting the file
// from the entries in memory (compactLocked: temporary file, fsync,
// rename, directory fsync), so that whatever the failure left in the old
// file (a partial frame, pages a failed fdatasync dropped) no longer
// matters. Entries reflect only what succeeded or is conservative: a claim
// whose write or flush failed was forgotten (its request never ran); an
// answer whose write failed was not recorded, so its claim stays
// ambiguous. When the rewrite fails too, the store stays failed with the
// new error.
func (s *Store) recoverLocked() {
	for s.syncing {
		s.cond.Wait()
	}
	if s.err == nil || s.closed {
		return
	}
	if err := s.compactLocked(); err != nil {
		s.err = fmt.Errorf("%w: %w", ErrWrite, err)
		return
	}
	s.err = nil
	s.cond.Broadcast()
}

// Healthy answers nil when the store can write durably: after a failed
// write or flush it tries to recover first, and answers the failure while
// that does not succeed.
func (s *Store) Healthy() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usableLocked()
}

// writeLocked appends r's frame and answers the write's ticket for waitSync.
// The frames Journaled holds go first, in the same write, so that the
// file keeps the order in which frames were folded.
func (s *Store) writeLocked(r *record) (uint64, error) {
	return s.writeFramesLocked(appendFrame(s.pend, r))
}

// flushPendLocked writes the frames Journaled holds, if any, and answers
// the write's ticket for waitSync.
func (s *Store) flushPendLocked() (uint64, error) {
	if len(s.pend) == 0 {
		return s.written, s.err
	}
	return s.writeFramesLocked(s.pend)
}

// writeFramesLocked appends b, which begins with the held frames, and
// answers the write's ticket. After a failed write the held frames are
// dropped with the rest: the rewrite that recovers from the failure
// writes what the entries hold.
func (s *Store) writeFramesLocked(b []byte) (uint64, error) {
	s.pend = b[:0]
	if cap(s.pend) > 4*pendFlushBytes {
		s.pend = nil
	}
	if _, err := s.f.Write(b); err != nil {
		s.err = fmt.Errorf("%w: %w", ErrWrite, err) // err names the file
		return 0, s.err
	}
	s.size += int64(len(b))
	s.written++
	return s.written, nil
}

// waitSync returns once write ticket n is durable. Concurrent callers share
// one fdatasync.
func (s *Store) waitSync(n uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.synced < n {
		if s.err != nil {
			return s.err
		}
		if s.syncing {
			s.cond.Wait()
			continue
		}
		s.syncing = true
		target, f := s.written, s.f
		s.mu.Unlock()
		err := fsutil.Fdatasync(f)
		s.mu.Lock()
		s.syncing = false
		if err != nil {
			s.err = fmt.Errorf("%w: sync %s: %w", ErrWrite, s.path, err)
		} else if target > s.synced {
			s.synced = target
		}
		s.cond.Broadcast()
	}
	return nil
}

// liveBytes is the size of a file holding only the live entries.
func (s *Store) liveBytes() int64 {
	var n int64
	for k, e := range s.entries {
		if e.released || e.riding {
			continue
		}
		n += int64(frameHeader + fixedBytes + len(k.scope) + len(k.key) + digestBytes)
		if e.hint != nil && !e.answered {
			n += int64(2 + len(e.hint))
		}
		if e.answered {
			n += int64(frameHeader + fixedBytes + len(k.scope) + len(k.key) + 6 + len(e.answer.Body))
		}
	}
	return n
}

// maybeCompactLocked compacts the running store when the file has grown
// past twice its live bytes; it waits for an in-flight flush first.
func (s *Store) maybeCompactLocked() {
	if s.size < max(compactMinBytes, s.checkAt) || s.err != nil {
		return
	}
	now := s.opts.Now().UnixMilli()
	for k, e := range s.entries {
		if s.expired(e, now) {
			delete(s.entries, k)
		}
	}
	// Weighing walks every entry: it runs again only after the file has
	// grown by a quarter of its live bytes, so that its cost per byte
	// written stays constant however many entries are retained.
	live := s.liveBytes()
	s.checkAt = s.size + live/4
	if s.size <= 2*live {
		return
	}
	for s.syncing {
		s.cond.Wait()
	}
	if err := s.compactLocked(); err != nil {
		s.err = fmt.Errorf("%w: %w", ErrWrite, err)
	} else {
		s.checkAt = s.size + s.size/4
	}
	s.cond.Broadcast()
}

// compactLocked rewrites the file with the live entries only. Every write
// so far is durable afterwards.
func (s *Store) compactLocked() error {
	var b []byte
	for k, e := range s.entries {
		if e.released || e.riding {
			continue // a riding claim is not durable yet: see ClaimRiding
		}
		if e.hint != nil && !e.answered {
			b = appendFrame(b, &record{Type: typeHinted, AtMs: e.claimAt, Scope: k.scope, Key: k.key, Digest: e.digest, Hint: e.hint})
		} else {
			b = appendFrame(b, &record{Type: typeClaim, AtMs: e.claimAt, Scope: k.scope, Key: k.key, Digest: e.digest})
		}
		if e.answered {
			b = appendFrame(b, &record{Type: typeAnswer, AtMs: e.atMs, Scope: k.scope, Key: k.key, Status: e.answer.Status, Body: e.answer.Body})
		}
	}
	if err := fsutil.WriteFileAtomic(s.path, b, 0o600); err != nil {
		return fmt.Errorf("idem: compact %s: %w", s.path, err)
	}
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("idem: reopen %s: %w", s.path, err)
	}
	s.f.Close()
	s.f = f
	s.size = int64(len(b))
	s.synced = s.written
	s.pend = s.pend[:0] // the entries hold them: written above
	return nil
}

// Len reports how many entries (claimed or answered) the store holds.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Close releases the file. Claims still running can no longer be answered.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.err != nil {
		// Frames Journaled could not write reach the file by the
		// rewrite that recovers from the failure.
		s.recoverLocked()
	}
	for s.syncing {
		s.cond.Wait()
	}
	s.cond.Broadcast()
	if s.err == nil {
		// Held frames: the journal may retire the log files that
		// hold them once this store is closed.
		_, _ = s.flushPendLocked()
	}
	var err error
	if s.synced < s.written && s.err == nil {
		// Answers recorded by AnswerDerivable and not yet flushed.
		err = fsutil.Fdatasync(s.f)
	}
	return errors.Join(err, s.f.Close())
}

// Claim is a durable claim of one request that this process runs.
type Claim struct {
	s      *Store
	k      entryKey
	e      *entry
	hinted bool
	once   sync.Once
	tally  *commits.Counter // the claiming request's commit count
	ride   *commits.Ride    // a ClaimRiding claim's records
}

// Answer durably records the request's answer and wakes requests waiting
// on the same key.
func (c *Claim) Answer(status int, body []byte) error {
	return c.answer(status, body, true)
}

// AnswerDerivable records the answer of a claim made with ClaimHinted
// without waiting for it to be durable: the next flush of the store (any
// later claim, answer or release, a compaction, or Close) makes it so. The
// caller vouches that, should the process end before then,
// Options.Derive answers the same from the claim's hint and state that is
// already durable; so the answer may be sent at once. Requests waiting on
// the same key are woken with it.
func (c *Claim) AnswerDerivable(status int, body []byte) error {
	if !c.hinted {
		return errors.New("idem: AnswerDerivable needs a hinted claim")
	}
	return c.answer(status, body, false)
}

func (c *Claim) answer(status int, body []byte, wait bool) error {
	r := record{Type: typeAnswer, Scope: c.k.scope, Key: c.k.key, Status: status, Body: body}
	if err := checkRecord(&r); err != nil {
		return err
	}
	return c.finish(&r, wait, func(e *entry) {
		e.answered = true
		e.answer = Answer{Status: status, Body: append([]byte(nil), body...)}
		e.atMs = r.AtMs
	})
}

// Abandon ends the claim without an answer, for a request whose outcome is
// unknown (it failed after it may have had an effect, and its answer could
// not be made durable): the key answers ErrAmbiguous from then on, in this
// process and after a restart, and the request never runs again.
func (c *Claim) Abandon() {
	c.once.Do(func() {
		s, e := c.s, c.e
		s.mu.Lock()
		defer s.mu.Unlock()
		close(e.done)
		e.done = nil
	})
}

// Release durably forgets the claim of a request that did not run, so its
// key may be used again.
func (c *Claim) Release() error {
	r := record{Type: typeRelease, Scope: c.k.scope, Key: c.k.key}
	return c.finish(&r, true, nil)
}

func (c *Claim) finish(r *record, wait bool, answered func(*entry)) error {
	err := errors.New("idem: claim already finished")
	c.once.Do(func() {
		s, e := c.s, c.e
		s.mu.Lock()
		defer s.mu.Unlock()
		defer func() {
			close(e.done)
			e.done = nil
		}()
		if e.riding && answered == nil {
			// A release of a claim nothing durable holds: forget it.
			if s.entries[c.k] == e {
				delete(s.entries, c.k)
			}
			err = nil
			return
		}
		if e.journaledAnswer && answered != nil {
			// The journal made the answer durable with the request's
			// last commit.
			err = nil
			return
		}
		if err = s.usableLocked(); err != nil {
			return
		}
		r.AtMs = s.opts.Now().UnixMilli()
		if e.riding {
			// An answer the journal did not carry: the claim is written
			// first, in the same flush.
			e.riding = false
			if _, err = s.writeLocked(&record{Type: typeClaim, AtMs: e.claimAt, Scope: c.k.scope, Key: c.k.key, Digest: e.digest}); err != nil {
				if s.entries[c.k] == e {
					delete(s.entries, c.k)
				}
				return
			}
		}
		var n uint64
		// A release that cannot be written still forgets the claim in
		// memory: its request did not run, so a retry may run it, and the
		// rewrite that recovers from the failure drops the claim from the
		// file (until then, a restart finds it ambiguous).
		forget := func() {
			if answered == nil && s.entries[c.k] == e {
				delete(s.entries, c.k)
			}
		}
		if n, err = s.writeLocked(r); err != nil {
			forget()
			return
		}
		// The in-memory entry reflects every written record, so that a
		// compaction racing with this flush keeps it; waiters on e.done
		// see it only once it is durable.
		if answered != nil {
			answered(e)
			e.hint = nil
		} else {
			e.released = true
		}
		if wait {
			s.mu.Unlock()
			err = s.waitSync(n)
			s.mu.Lock()
			c.tally.Add(1)
		}
		if err != nil {
			forget()
			return
		}
		if e.released && s.entries[c.k] == e {
			delete(s.entries, c.k)
		}
		s.maybeCompactLocked()
	})
	return err
}
