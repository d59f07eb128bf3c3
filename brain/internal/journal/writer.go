package journal

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// writeLoop is the single writer: it takes everything queued, writes it,
// flushes every touched file and directory once, then acknowledges.
func (fs *FileStore) writeLoop() {
	defer close(fs.wdone)
	for {
		fs.qmu.Lock()
		for len(fs.queue) == 0 && !fs.closing {
			fs.qcond.Wait()
		}
		if len(fs.queue) == 0 {
			fs.qmu.Unlock()
			return
		}
		batch := fs.takeBatch()
		fs.qmu.Unlock()
		fs.commit(batch)
		if fs.logsLive && (fs.logSize >= fs.opts.CommitLogBytes || time.Since(fs.lastSyncPoint) >= fs.opts.SyncPointInterval) {
			// A failure leaves the log files in place; it is retried at
			// the next trigger (or reported by Close when sticky).
			fs.syncPoint()
		}
	}
}

// takeBatch removes the next group commit from the queue: everything
// queued, but touching fewer sessions than MaxOpenFiles. fs.qmu is held.
func (fs *FileStore) takeBatch() []*appendReq {
	limit := max(fs.opts.MaxOpenFiles-1, 1)
	seen := make(map[*session]struct{})
	n := 0
	for ; n < len(fs.queue); n++ {
		s := fs.queue[n].s
		if _, ok := seen[s]; !ok {
			if len(seen) == limit {
				break
			}
			seen[s] = struct{}{}
		}
	}
	batch := make([]*appendReq, n)
	copy(batch, fs.queue)
	rest := copy(fs.queue, fs.queue[n:])
	clear(fs.queue[rest:])
	fs.queue = fs.queue[:rest]
	return batch
}

// pendingWrite is a run of a request's frames to write to a segment.
type pendingWrite struct {
	s     *session
	f     *os.File
	data  []byte
	start int64 // the segment's size before the write
	req   *appendReq
}

// round collects what one group commit writes to the commit log.
type round struct {
	log        []byte // the round's log entries
	pending    []pendingWrite
	closeAfter []*os.File
	failed     map[*session]error
	err        error // fails every request of the round
}

func (fs *FileStore) newRound() *round {
	return &round{log: fs.logBuf[:0], failed: make(map[*session]error)}
}

func (fs *FileStore) commit(batch []*appendReq) {
	if fs.needSyncPoint {
		// The last log write failed: retire that log file (making the
		// segments it described durable) before anything new is logged.
		if err := fs.syncPoint(); err != nil {
			for _, req := range batch {
				req.err = err
			}
		}
	}
	rd := fs.newRound()
	start := 0
	for i, req := range batch {
		if req.del {
			fs.finish(batch[start:i], rd)
			rd = fs.newRound()
			start = i + 1
			fs.deleteSession(req)
			continue
		}
		if req.err != nil {
			continue
		}
		if err := rd.failed[req.s]; err != nil {
			req.err = err
			continue
		}
		if req.err = fs.write(req, rd); req.err != nil {
			rd.failed[req.s] = req.err
		}
	}
	fs.finish(batch[start:], rd)
}

// write appends req's frames to its session's tail segment, rolling to new
// segments at the size bound, and adds their log entries to the round.
// The segment writes go to the page cache; the commit log makes them
// durable.
func (fs *FileStore) write(req *appendReq, rd *round) error {
	s := req.s
	s.mu.Lock()
	stale := req.gen != s.gen
	segs := s.segs
	var lastSize int64
	if len(segs) > 0 {
		lastSize = segs[len(segs)-1].size
	}
	s.mu.Unlock()
	if stale {
		return fmt.Errorf("%w: session %s was reset before the append was written", ErrConflict, s.id)
	}
	if s.wf == nil && len(segs) > 0 {
		last := segs[len(segs)-1]
		path := filepath.Join(s.dir, "journal", segmentName(last.first))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("journal: open %s: %w", path, err)
		}
		s.wf, s.wfirst, s.wsize = f, last.first, lastSize
		s.whandle.Store(true)
	}
	if s.wf != nil {
		if s.welem == nil {
			s.welem = fs.openLRU.PushFront(s)
		} else {
			fs.openLRU.MoveToFront(s.welem)
		}
	}
	n := len(req.offs)
	for i := 0; i < n; {
		if s.wf == nil || (s.wsize > 0 && s.wsize+int64(frameLen(req, i)) > fs.opts.SegmentBytes) {
			if err := fs.roll(s, req.first+uint64(i), rd); err != nil {
				return err
			}
		}
		// Take frames [i, j) that fit in the current segment.
		j, size := i+1, s.wsize+int64(frameLen(req, i))
		for j < n && size+int64(frameLen(req, j)) <= fs.opts.SegmentBytes {
			size += int64(frameLen(req, j))
			j++
		}
		end := len(req.frames)
		if j < n {
			end = req.offs[j]
		}
		// The bytes are written by finish, while the log is flushed.
		rd.pending = append(rd.pending, pendingWrite{s: s, f: s.wf, data: req.frames[req.offs[i]:end], start: s.wsize, req: req})
		fs.dirty[s.wf.Name()] = false
		// One log entry per run of frames, cut at logRunBytes.
		for k, off := i, s.wsize; k < j; {
			m, size := k+1, frameLen(req, k)
			for m < j && size+frameLen(req, m) <= logRunBytes {
				size += frameLen(req, m)
				m++
			}
			rd.log = appendLogEntry(rd.log, s.id, s.wfirst, off, req.frames[req.offs[k]:req.offs[k]+size])
			off += int64(size)
			k = m
		}
		req.places = append(req.places, placement{segFirst: s.wfirst, off: s.wsize, i: i, j: j})
		s.wsize = size
		i = j
	}
	return nil
}

func frameLen(req *appendReq, i int) int {
	if i+1 < len(req.offs) {
		return req.offs[i+1] - req.offs[i]
	}
	return len(req.frames) - req.offs[i]
}

// roll starts a new segment whose first record is first, creating the
// session's directories when needed.
func (fs *FileStore) roll(s *session, first uint64, rd *round) error {
	if s.wf != nil {
		rd.closeAfter = append(rd.closeAfter, s.wf)
		s.wf = nil
	}
	jdir := filepath.Join(s.dir, "journal")
	if err := os.Mkdir(s.dir, 0o700); err == nil {
		fs.dirty[fs.dir] = true
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("journal: create %s: %w", s.dir, err)
	}
	if err := os.Mkdir(jdir, 0o700); err == nil {
		fs.dirty[s.dir] = true
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("journal: create %s: %w", jdir, err)
	}
	path := filepath.Join(jdir, segmentName(first))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("journal: create %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 0 {
		f.Close()
		return fmt.Errorf("journal: create %s: file exists and is not empty", path)
	}
	fs.dirty[jdir] = true
	s.wf, s.wfirst, s.wsize = f, first, 0
	s.whandle.Store(true)
	if s.welem == nil {
		s.welem = fs.openLRU.PushFront(s)
	} else {
		fs.openLRU.MoveToFront(s.welem)
	}
	if fs.rollHook != nil {
		fs.rollHook()
	}
	return nil
}

// closeTail closes the writer's handle of s.
func (fs *FileStore) closeTail(s *session) {
	if s.welem != nil {
		fs.openLRU.Remove(s.welem)
		s.welem = nil
	}
	if s.wf != nil {
		s.wf.Close()
		s.wf = nil
	}
	s.whandle.Store(false)
}

// finish flushes the round, then publishes or fails each request in order.
func (fs *FileStore) finish(reqs []*appendReq, rd *round) {
	if len(reqs) == 0 {
		return
	}
	// One write of the log, then its fdatasync runs while the segment
	// writes (page cache) are issued; both end before anything is
	// acknowledged.
	syncErr := rd.err
	if syncErr == nil {
		syncErr = fs.logWrite(rd.log)
	}
	// Where the round's entries begin (logWrite may have started a new
	// log file).
	logStart := fs.logSize - int64(len(rd.log))
	var synced func() error
	var syncStart time.Time
	if syncErr == nil && len(rd.log) > 0 {
		fs.syncs.Add(1)
		syncStart = time.Now()
		synced = fs.startFlush(fs.log, syncStart)
	}
	var segErr error
	if syncErr == nil {
		segErr = fs.writeSegments(rd)
	}
	if synced != nil {
		if err := synced(); err != nil {
			// Nothing of the round is acknowledged: its entries are cut
			// from the log with the file (best effort), so that a replay
			// after the process stops does not bring its frames back.
			fs.logSize = logStart
			syncErr = fs.logFailed(err)
		}
	}
	if syncErr == nil && segErr != nil {
		// The log holds the round's entries but a segment does not hold
		// its frames: the round fails whole, and its entries are cut
		// from the log so that no replay or rewrite brings them back.
		syncErr = fs.logCut(logStart, segErr)
	}
	if syncErr != nil {
		fs.cutRound(rd)
	}
	clear(rd.pending)
	if synced != nil {
		if syncErr == nil && (fs.opts.OnCommit != nil || fs.opts.OnDurable != nil) {
			d := time.Since(syncStart)
			n := 0
			for _, req := range reqs {
				if req.err == nil {
					n += len(req.recs)
					if fs.opts.OnDurable != nil {
						fs.opts.OnDurable(req.s.id, req.recs)
					}
				}
			}
			if fs.opts.OnCommit != nil {
				fs.opts.OnCommit(n, d)
			}
		}
	}
	if cap(rd.log) <= 4<<20 {
		fs.logBuf = rd.log[:0]
	}
	for _, f := range rd.closeAfter {
		f.Close()
	}
	for fs.openLRU.Len() > fs.opts.MaxOpenFiles {
		fs.closeTail(fs.openLRU.Back().Value.(*session))
	}
	fs.openFiles.Store(int64(fs.openLRU.Len()))
	fs.rounds.Add(1)
	var released int64
	faulted := false
	for _, req := range reqs {
		s := req.s
		err := req.err
		if err == nil {
			err = syncErr
		}
		if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrWrite) {
			err = fmt.Errorf("%w: %w", ErrWrite, err)
		}
		if errors.Is(err, ErrWrite) {
			faulted = true
			fs.fault.Store(&err)
		}
		s.mu.Lock()
		if err == nil && req.gen != s.gen {
			err = fmt.Errorf("%w: session %s was reset before the append was written", ErrConflict, s.id)
		}
		s.queued -= req.size
		s.inflight--
		if err != nil {
			if req.gen == s.gen {
				fs.invalidate(s, err)
				if req.first == 1 && errors.Is(err, ErrWrite) {
					removeUnborn(s.dir)
				}
			}
		} else {
			s.publish(req)
			fs.appended.Add(int64(len(req.recs)))
		}
		s.mu.Unlock()
		released += req.size
		req.done <- err
	}
	fs.qmu.Lock()
	fs.queued -= released
	fs.qmu.Unlock()
	if !faulted && len(rd.log) > 0 {
		fs.fault.Store(nil)
	}
}

// writeSegments writes the round's frames to their segments in order. A
// failed write is cut back (best effort) and fails its request and the
// session's later requests of the round, and the next round first takes
// a sync point. It answers the first failure: the log already names
// those frames, so finish fails the round and cuts its entries from the
// log.
func (fs *FileStore) writeSegments(rd *round) error {
	var failed map[*session]error
	var first error
	for _, pw := range rd.pending {
		if err := failed[pw.s]; err != nil {
			pw.req.err = err
			continue
		}
		w := pw.data
		if fs.segWriteHook != nil {
			w = fs.segWriteHook(w)
		}
		if _, err := pw.f.Write(w); err != nil {
			pw.f.Truncate(pw.start)
			err = fmt.Errorf("journal: write %s: %w", pw.f.Name(), err)
			pw.req.err = err
			if failed == nil {
				failed = make(map[*session]error)
			}
			failed[pw.s] = err
			first = cmp.Or(first, err)
			fs.needSyncPoint = true
			fs.suspect.Store(true)
		}
	}
	return first
}

// cutRound cuts every segment the round wrote back to its size before the
// round (best effort), latest write first: the round's log write or
// fdatasync failed, so none of its appends is acknowledged, and none of
// their frames may be found in a segment later (by a reader, or by a sync
// point, which writes logged frames again only into segments that hold
// their whole range).
func (fs *FileStore) cutRound(rd *round) {
	for i := len(rd.pending) - 1; i >= 0; i-- {
		pw := rd.pending[i]
		pw.f.Truncate(pw.start)
	}
}

// invalidate forgets s's state after a failed write so that the next use
// recovers it from disk; queued appends of the old state fail. s.mu is held.
func (fs *FileStore) invalidate(s *session, err error) {
	s.gen++
	s.state = stateUnloaded
	s.resetIndex()
	fs.closeTail(s)
	for sub := range s.subs {
		sub.end(fmt.Errorf("journal: session %s write failed: %w", s.id, err))
	}
}

// publish makes req's records visible to readers and subscribers. s.mu is
// held.
func (s *session) publish(req *appendReq) {
	for _, p := range req.places {
		if n := len(s.segs); n == 0 || s.segs[n-1].first != p.segFirst {
			s.segs = append(s.segs, segInfo{first: p.segFirst})
		}
		off := p.off
		for k := p.i; k < p.j; k++ {
			s.addIndex(req.first+uint64(k), off)
			s.tail = indexEntry{seq: req.first + uint64(k), seg: len(s.segs) - 1, off: off}
			off += int64(frameLen(req, k))
		}
		s.segs[len(s.segs)-1].size = off
	}
	s.committedNext = req.first + uint64(len(req.recs))
	for sub := range s.subs {
		sub.push(req.recs)
	}
}

// parallel runs fn on every item with at most n calls at a time and joins
// their errors.
func parallel[T any](items []T, n int, fn func(T) error) error {
	if len(items) == 1 {
		return fn(items[0])
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan T)
	)
	for range min(len(items), n) {
		wg.Go(func() {
			for it := range next {
				if err := fn(it); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, it := range items {
		next <- it
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// syncDir fsyncs a directory so that its new entries are durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("journal: sync dir %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: sync dir %s: %w", dir, err)
	}
	return nil
}

// deleteSession removes a session's directory (writer side of Delete).
func (fs *FileStore) deleteSession(req *appendReq) {
	s := req.s
	fs.closeTail(s)
	// Retire every log entry of the session before its files go, so that
	// a replay never brings them back. On a full disk, where the marker
	// cannot be written, the log files are removed instead: a delete is
	// how space is freed.
	fs.born.forget(s.id)
	spErr := fs.syncPoint()
	if errors.Is(spErr, errNotRetired) {
		spErr = fs.retireByRemoval()
	}
	s.mu.Lock()
	err := spErr
	if err == nil {
		// A checkpoint being written finishes first and goes with the
		// directory; one computed before the delete is not written after.
		s.ckMu.Lock()
		// The records kept in quarantine go first; a crash part way
		// leaves what stands in the directory's place, a damaged
		// session that a Delete removes again.
		if err = fs.dropQuarantine(s.id); err == nil {
			err = fs.removeSessionDir(s.dir)
		}
		if err == nil {
			s.deletes.Add(1)
		}
		s.ckMu.Unlock()
	}
	s.resetIndex()
	s.committedNext = 1
	s.inflight--
	if err != nil {
		s.gen++
		s.state = stateUnloaded
	}
	for sub := range s.subs {
		sub.end(fmt.Errorf("journal: session %s deleted: %w", s.id, ErrNotFound))
	}
	s.mu.Unlock()
	req.done <- err
}
