package idem

import (
	"errors"
	"fmt"
	"os"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/internal/fsutil"
)

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
// past twice its live bytes; it waits for an in-flight flush first. It
// runs on the path of the request whose record made the file grow, so the
// rewrite, when one runs, is a durable commit that request waits on and
// is counted in tally; and in SyncJournaled (tally nil), for the frames
// that ride the journal, which no request of this store writes.
func (s *Store) maybeCompactLocked(tally *commits.Counter) {
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
	tally.Add(1)
	if err := s.compactLocked(); err != nil {
		s.err = fmt.Errorf("%w: %w", ErrWrite, err)
	} else {
		s.checkAt = s.size + s.size/4
	}
	s.cond.Broadcast()
}

// openLog opens the requests log after a compaction replaced it.
var openLog = os.OpenFile

// errReplaced marks a compaction that replaced the file but could not
// open the new one: the store's file descriptor still names the old,
// unlinked file.
var errReplaced = errors.New("idem: requests log was replaced but could not be reopened")

// compactLocked rewrites the file with the live entries only. Every write
// so far is durable afterwards. When it fails with errReplaced, the file
// on disk holds every live entry but the store's descriptor is stale: the
// caller must leave the store failed (s.err) until a later compaction
// succeeds.
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
	f, err := openLog(s.path, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		// The rename is done: the open file is no longer the one a
		// restart reads, so nothing may be written to it any more.
		return fmt.Errorf("%w: reopen %s: %w", errReplaced, s.path, err)
	}
	s.f.Close()
	s.f = f
	s.size = int64(len(b))
	s.synced = s.written
	s.pend = s.pend[:0] // the entries hold them: written above
	return nil
}
