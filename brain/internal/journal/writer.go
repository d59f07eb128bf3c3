package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
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

// round collects what one group commit must flush.
type round struct {
	files      map[*os.File]struct{}
	dirs       map[string]struct{}
	closeAfter []*os.File
	failed     map[*session]error
}

func newRound() *round {
	return &round{files: make(map[*os.File]struct{}), dirs: make(map[string]struct{}), failed: make(map[*session]error)}
}

func (fs *FileStore) commit(batch []*appendReq) {
	rd := newRound()
	start := 0
	for i, req := range batch {
		if req.del {
			fs.finish(batch[start:i], rd)
			rd = newRound()
			start = i + 1
			fs.deleteSession(req)
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
// segments at the size bound.
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
		if _, err := s.wf.Write(req.frames[req.offs[i]:end]); err != nil {
			// Best effort: cut what was half written so the next open sees
			// a clean tail.
			s.wf.Truncate(s.wsize)
			return fmt.Errorf("journal: write %s: %w", s.wf.Name(), err)
		}
		rd.files[s.wf] = struct{}{}
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
		rd.dirs[fs.dir] = struct{}{}
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("journal: create %s: %w", s.dir, err)
	}
	if err := os.Mkdir(jdir, 0o700); err == nil {
		rd.dirs[s.dir] = struct{}{}
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
	rd.dirs[jdir] = struct{}{}
	s.wf, s.wfirst, s.wsize = f, first, 0
	s.whandle.Store(true)
	if s.welem == nil {
		s.welem = fs.openLRU.PushFront(s)
	} else {
		fs.openLRU.MoveToFront(s.welem)
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
	syncErr := fs.flush(rd)
	for _, f := range rd.closeAfter {
		f.Close()
	}
	for fs.openLRU.Len() > fs.opts.MaxOpenFiles {
		fs.closeTail(fs.openLRU.Back().Value.(*session))
	}
	fs.openFiles.Store(int64(fs.openLRU.Len()))
	fs.rounds.Add(1)
	var released int64
	for _, req := range reqs {
		s := req.s
		err := req.err
		if err == nil {
			err = syncErr
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
			off += int64(frameLen(req, k))
		}
		s.segs[len(s.segs)-1].size = off
	}
	s.committedNext = req.first + uint64(len(req.recs))
	for sub := range s.subs {
		sub.push(req.recs)
	}
}

// flush makes the round durable. When it touched at least
// Options.SyncFSMinFiles files and directories, one syncfs(2) of the
// journal's file system covers them all; otherwise each written file is
// fdatasync'd and each directory that gained an entry fsync'd, issued
// concurrently so the file system can merge them.
func (fs *FileStore) flush(rd *round) error {
	if n := len(rd.files) + len(rd.dirs); fs.root != nil && n > 0 && n >= fs.opts.SyncFSMinFiles {
		fs.syncs.Add(1)
		fs.syncfsN.Add(1)
		err := syncfs(fs.root)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.ENOSYS) && !errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("journal: sync %s: %w", fs.dir, err)
		}
		// Not available here (seccomp, emulated kernel): flush file by
		// file from now on.
		fs.root.Close()
		fs.root = nil
	}
	type job struct {
		f   *os.File
		dir string
	}
	jobs := make([]job, 0, len(rd.files)+len(rd.dirs))
	for f := range rd.files {
		jobs = append(jobs, job{f: f})
	}
	for d := range rd.dirs {
		jobs = append(jobs, job{dir: d})
	}
	fs.syncs.Add(int64(len(jobs)))
	run := func(j job) error {
		if j.f != nil {
			if err := fdatasync(j.f); err != nil {
				return fmt.Errorf("journal: sync %s: %w", j.f.Name(), err)
			}
			return nil
		}
		return syncDir(j.dir)
	}
	if len(jobs) == 1 {
		return run(jobs[0])
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan job)
	)
	for range min(len(jobs), fs.opts.SyncParallelism) {
		wg.Go(func() {
			for j := range next {
				if err := run(j); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
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
	s.mu.Lock()
	err := os.RemoveAll(s.dir)
	if err == nil {
		err = syncDir(fs.dir)
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
