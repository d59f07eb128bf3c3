package idem

import (
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
	// Retention is how long an answered entry is kept after its last
	// record; zero keeps entries forever. Claims without an answer are
	// kept forever.
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
	removeTemps(path)
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
		// Settled hints must be durable before Open returns. Otherwise
		// the compaction only drops entries the file already says are
		// gone: when it fails (a full disk), the file is used as it is
		// and the next Open compacts it.
		switch err := s.compactLocked(); {
		case err != nil && resolved:
			s.f.Close()
			return nil, err
		case errors.Is(err, errReplaced):
			// The file on disk holds every live entry, but the open
			// descriptor names the unlinked old file: the store stays
			// failed until a rewrite reopens it (see recoverLocked).
			s.err = fmt.Errorf("%w: %w", ErrWrite, err)
		}
	}
	if err := fsutil.SyncDir(filepath.Dir(path)); err != nil {
		s.f.Close()
		return nil, err
	}
	return s, nil
}

// removeTemps removes the temporary files a compaction of path cut short
// by a crash left beside it (best effort: they are never read).
func removeTemps(path string) {
	dir, base := filepath.Split(path)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fsutil.IsTempOf(e.Name(), base) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// load folds the records of data and answers how many bytes hold complete
// frames: what follows them is an incomplete final write, or nothing but
// zero bytes (a size a crash made durable without the data).
func (s *Store) load(data []byte) (int, error) {
	off := 0
	for off < len(data) {
		r, n, st := nextFrame(data[off:])
		switch {
		case st != frameOK && allZero(data[off:]):
			return off, nil
		case st == frameIncomplete && !zeroLength(data[off:]):
			return off, nil
		case st == frameDamaged && tornIntoZeros(data, off):
			return off, nil
		case st != frameOK:
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

// expired reports whether an answered entry is past the retention. A
// claim without an answer never expires: its request may have had an
// effect, so its key stays ambiguous and the request never runs again.
func (s *Store) expired(e *entry, nowMs int64) bool {
	return s.opts.Retention > 0 && e.done == nil && e.answered && nowMs-e.atMs > s.opts.Retention.Milliseconds()
}

// usableLocked reports why the store cannot be used, if it cannot. After
// a failed write or flush it first tries to recover; the rewrite that
// recovery runs is a durable commit the caller waits on, counted in tally.
func (s *Store) usableLocked(tally *commits.Counter) error {
	if s.closed {
		return ErrClosed
	}
	if s.err != nil {
		s.recoverLocked(tally)
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
func (s *Store) recoverLocked(tally *commits.Counter) {
	for s.syncing {
		s.cond.Wait()
	}
	if s.err == nil || s.closed {
		return
	}
	tally.Add(1)
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
	return s.usableLocked(nil)
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
		s.recoverLocked(nil)
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
