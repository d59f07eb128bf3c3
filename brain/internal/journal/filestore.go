package journal

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-in-go/brain/brain/internal/uring"
)

// FileStore is the durable Store: one directory per session holding
// checksummed segment files (see the package documentation for the
// format). One writer goroutine commits appends of all sessions in groups.
type FileStore struct {
	dir  string
	opts Options

	closed atomic.Bool
	// root is the journal directory, held open for syncfs(2); nil when
	// syncfs is not used.
	root *os.File

	mu       sync.Mutex // guards sessions, idle and session.refs/idleElem
	sessions map[string]*session
	idle     *list.List // sessions with no reference, most recently used first

	qmu         sync.Mutex // guards the fields below
	qcond       *sync.Cond
	queue       []*appendReq
	queued      int64
	closing     bool
	wdone       chan struct{}
	openLRU     *list.List // writer-owned: sessions with an open segment handle
	syncs       atomic.Int64
	syncfsN     atomic.Int64
	syncPointsN atomic.Int64
	rounds      atomic.Int64
	fault       atomic.Pointer[error] // the last failed round's error, until a round or probe succeeds
	quarantine  sync.Map              // session id -> *DamagedError: records kept in quarantineDir
	appended    atomic.Int64
	recoveries  atomic.Int64 // sessions opened from disk
	openFiles   atomic.Int64
	warmBytes   atomic.Int64 // bytes held by the sessions' warm sets

	// The shared commit log, owned by the writer goroutine (by
	// OpenFileStore before it starts and by Close after it ends).
	log           *os.File
	logSize       int64
	logNext       uint64 // number of the next log file
	logDirReady   bool
	logsLive      bool            // log files exist that no sync point retired
	dirty         map[string]bool // written since the last sync point; true for directories
	logBuf        []byte
	needSyncPoint bool        // a log write failed: take a sync point before the next commit
	resync        bool        // a sync point's flush failed: rewrite the segments from the log first
	repaired      atomic.Bool // a reader repaired a segment from the log: resync at the next sync point
	suspect       atomic.Bool // a write or flush failed since the last sync point retired the log
	lastSyncPoint time.Time
	skipCloseSync atomic.Bool
	// segWriteHook, when set by a test, returns the part of each segment
	// write that reaches the file (simulating lost page-cache writes).
	segWriteHook func([]byte) []byte
	// syncHook, when set by a test, answers an error for a sync point's
	// flush of the dirty set before it is tried (simulating a failed
	// flush).
	syncHook func() error
	// rollHook, when set by a test, runs on the writer after a roll
	// created a segment, before anything is written to it or logged.
	rollHook func()
	// ckHook, when set by a test, runs in WriteCheckpoint between reading
	// the session's segments and writing the file.
	ckHook func()
	// ring flushes the commit log when io_uring is available and the
	// flush mode allows it (nil: fdatasync on a goroutine); sched tells
	// the writer when to use it (FlushAuto). The writer sets it up at the
	// first flush that would use it (ringTried), so that a store only
	// opened to be read costs no io_uring setup and teardown.
	ring        *uring.Ring
	ringTried   bool
	sched       schedWatch
	ringFlushes atomic.Int64

	// born remembers the sessions Sessions found holding a record, so
	// that a listing reads each session's first segment once.
	born born
}

var _ Store = (*FileStore)(nil)

// Session states.
const (
	stateUnloaded = iota
	stateReady
	stateDamaged
)

// segInfo describes one committed segment file.
type segInfo struct {
	first uint64 // sequence of its first record (its name)
	size  int64  // committed bytes
}

type session struct {
	id  string
	dir string

	refs     int           // calls using s; guarded by fs.mu
	idleElem *list.Element // s in fs.idle when refs is 0; guarded by fs.mu
	whandle  atomic.Bool   // the writer holds a segment handle of s

	mu            sync.Mutex
	state         int
	damage        *DamagedError
	gen           uint64 // bumped whenever queued appends must be abandoned
	reservedNext  uint64 // next sequence including queued appends
	committedNext uint64 // next sequence after the durable records
	lastMs        int64
	queued        int64
	inflight      int // appends and deletes queued for the writer
	segs          []segInfo
	index         []indexEntry
	hint          indexEntry // where the last page read stopped (seq 0: none)
	tail          indexEntry // where the last frame published since the index was built starts (seq 0: none)
	cold          indexEntry // end of a checkpoint's prefix not indexed yet (seq 0: none)
	warm          *warmSet   // the prefix a Read verified, kept for the pages after it
	epoch         uint64     // bumped by resetIndex
	subs          map[*Subscription]struct{}
	ckMu          sync.Mutex // serialises checkpoint writes
	// deletes counts the Deletes that removed the session's files; it is
	// bumped with ckMu held, so that a checkpoint computed before one is
	// not written after it.
	deletes atomic.Uint64

	// Owned by the writer goroutine.
	wf     *os.File
	wfirst uint64
	wsize  int64
	welem  *list.Element
}

// OpenFileStore opens the journal kept in dir (the data directory's
// sessions/ directory), creating dir if needed. Sessions are opened and
// recovered lazily on first use.
func OpenFileStore(dir string, opts *Options) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	fs := &FileStore{
		dir:      dir,
		opts:     opts.withDefaults(),
		sessions: make(map[string]*session),
		idle:     list.New(),
		wdone:    make(chan struct{}),
		openLRU:  list.New(),
	}
	if fs.opts.SyncFSMinFiles > 0 && syncfsSupported() {
		// Opened before any write so that syncfs reports every writeback
		// error from now on.
		root, err := os.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		fs.root = root
	}
	fs.removeTrash()
	fs.logNext = 1
	fs.dirty = make(map[string]bool)
	fs.lastSyncPoint = time.Now()
	if err := fs.replay(); err != nil {
		if fs.root != nil {
			fs.root.Close()
		}
		return nil, err
	}
	fs.qcond = sync.NewCond(&fs.qmu)
	go fs.writeLoop()
	return fs, nil
}

// session returns the in-memory handle of id, creating it unloaded, with
// a reference the caller gives back with release.
func (fs *FileStore) session(id string) (*session, error) {
	if fs.closed.Load() {
		return nil, ErrClosed
	}
	if err := checkSessionID(id); err != nil {
		return nil, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s := fs.sessions[id]
	if s == nil {
		s = &session{id: id, dir: filepath.Join(fs.dir, id), subs: make(map[*Subscription]struct{})}
		fs.sessions[id] = s
	}
	if s.idleElem != nil {
		fs.idle.Remove(s.idleElem)
		s.idleElem = nil
	}
	s.refs++
	return s, nil
}

// release gives back a reference taken by session, then drops idle
// sessions beyond Options.MaxLoadedSessions. s.mu must not be held.
func (fs *FileStore) release(s *session) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if s.refs--; s.refs == 0 && fs.sessions[s.id] == s {
		s.idleElem = fs.idle.PushFront(s)
	}
	// Sessions that cannot go yet are moved to the front; a few tries per
	// release keep this O(1).
	for tries := 0; len(fs.sessions) > fs.opts.MaxLoadedSessions && tries < 4; tries++ {
		e := fs.idle.Back()
		if e == nil {
			return
		}
		v := e.Value.(*session)
		if v == s {
			// Every other idle session is held: the one just used
			// stays, or a reader paging through it would open it
			// from disk again for each page.
			return
		}
		if !fs.evict(v) {
			fs.idle.MoveToFront(e)
			continue
		}
		fs.idle.Remove(e)
		v.idleElem = nil
		delete(fs.sessions, v.id)
	}
}

// evict reports whether s, which has no reference, can be dropped, and if
// so marks it unloaded. fs.mu is held.
func (fs *FileStore) evict(s *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A handle is opened only for a queued request, before finish drops
	// inflight under s.mu: with inflight 0 seen here, whandle is current.
	if s.inflight > 0 || len(s.subs) > 0 || s.whandle.Load() {
		return false
	}
	s.state = stateUnloaded
	s.resetIndex()
	return true
}

// readySession returns id's session loaded, with s.mu held and a
// reference the caller gives back with release after unlocking.
func (fs *FileStore) readySession(id string) (*session, error) {
	return fs.readySessionKeep(id, false)
}

// readySessionKeep is readySession; with keep, a recovery that reads the
// journal from its start keeps the bytes it checked (s.warm) for the
// Reads that follow.
func (fs *FileStore) readySessionKeep(id string, keep bool) (*session, error) {
	s, err := fs.session(id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.state == stateUnloaded {
		if err := fs.recover(s, keep); err != nil {
			s.mu.Unlock()
			fs.release(s)
			return nil, err
		}
		fs.forgetUnborn(s)
	}
	if s.state == stateDamaged {
		d := s.damage
		s.mu.Unlock()
		fs.release(s)
		return nil, d
	}
	return s, nil
}

// Next implements Store.
func (fs *FileStore) Next(ctx context.Context, id string) (uint64, error) {
	s, err := fs.readySession(id)
	if err != nil {
		return 0, err
	}
	defer fs.release(s)
	defer s.mu.Unlock()
	return s.committedNext, nil
}

// appendReq is one Append (or Delete) waiting for the writer.
type appendReq struct {
	s      *session
	gen    uint64
	first  uint64
	recs   []Record // published to subscribers; Data aliases frames
	frames []byte
	offs   []int // start of each frame in frames
	size   int64
	del    bool
	done   chan error

	// Filled by the writer.
	err    error
	places []placement
}

// placement says where a run of frames of a request landed.
type placement struct {
	segFirst uint64
	off      int64 // segment offset of frame i
	i, j     int   // frames [i, j)
}

// Append implements Store.
func (fs *FileStore) Append(ctx context.Context, id string, expectedNext uint64, records []Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	total, err := checkRecords(records, fs.opts.MaxRecordBytes)
	if err != nil {
		return err
	}
	s, err := fs.readySession(id)
	if err != nil {
		return err
	}
	defer fs.release(s)
	// Nothing is appended after a prefix that was never checked since open.
	if err := fs.verifyCold(s); err != nil {
		s.mu.Unlock()
		return err
	}
	if expectedNext != s.reservedNext {
		next := s.reservedNext
		s.mu.Unlock()
		return fmt.Errorf("%w: session %s expected %d, next is %d", ErrConflict, id, expectedNext, next)
	}
	size := int64(total)
	if s.queued > 0 && s.queued+size > fs.opts.MaxSessionQueueBytes {
		q := s.queued
		s.mu.Unlock()
		return fmt.Errorf("%w: session %s has %d bytes queued, adding %d exceeds MaxSessionQueueBytes %d",
			ErrOverloaded, id, q, size, fs.opts.MaxSessionQueueBytes)
	}
	req := &appendReq{s: s, gen: s.gen, first: expectedNext, size: size, done: make(chan error, 1)}
	req.frames = make([]byte, 0, total)
	req.offs = make([]int, len(records))
	req.recs = make([]Record, len(records))
	last := stampTimes(records, time.Now().UnixMilli(), s.lastMs)
	for i := range records {
		records[i].Sequence = expectedNext + uint64(i)
		start := len(req.frames)
		req.offs[i] = start
		req.frames = appendFrame(req.frames, &records[i])
		r := records[i]
		dataAt := start + frameHeaderSize + payloadFixed + len(r.Kind)
		if r.Data != nil {
			r.Data = req.frames[dataAt : dataAt+len(r.Data) : dataAt+len(r.Data)]
		}
		if r.Origin != nil {
			at := dataAt + len(records[i].Data) + 4
			r.Origin = req.frames[at : at+len(r.Origin) : at+len(r.Origin)]
		}
		req.recs[i] = r
	}
	if err := fs.enqueue(req); err != nil {
		s.mu.Unlock()
		return err
	}
	s.lastMs = last
	s.reservedNext += uint64(len(records))
	s.queued += size
	s.inflight++
	s.mu.Unlock()
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("journal: append to %s abandoned, outcome unknown: %w", id, ctx.Err())
	}
}

// enqueue hands req to the writer, enforcing the global queue bound.
func (fs *FileStore) enqueue(req *appendReq) error {
	fs.qmu.Lock()
	defer fs.qmu.Unlock()
	if fs.closing {
		return ErrClosed
	}
	if fs.queued > 0 && fs.queued+req.size > fs.opts.MaxQueueBytes {
		return fmt.Errorf("%w: %d bytes queued, adding %d exceeds MaxQueueBytes %d",
			ErrOverloaded, fs.queued, req.size, fs.opts.MaxQueueBytes)
	}
	fs.queued += req.size
	fs.queue = append(fs.queue, req)
	if len(fs.queue) == 1 {
		fs.qcond.Signal()
	}
	return nil
}

// Subscribe implements Store.
func (fs *FileStore) Subscribe(ctx context.Context, id string, after uint64, backlog int) (*Subscription, error) {
	s, err := fs.readySession(id)
	if err != nil {
		return nil, err
	}
	defer fs.release(s)
	defer s.mu.Unlock()
	read := func(ctx context.Context, after uint64) ([]Record, error) {
		return fs.Read(ctx, id, after, 0, 0)
	}
	unregister := func(sub *Subscription) {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
	}
	sub := newSubscription(id, after, s.committedNext, backlog, read, unregister)
	s.subs[sub] = struct{}{}
	return sub, nil
}

// Healthy answers nil when the journal can write durably. After a failed
// append it answers that failure until a later round commits, or until a
// probe (a 64 KiB file written, fdatasync'd and removed in the commit log
// directory, which Healthy tries then) succeeds.
func (fs *FileStore) Healthy() error {
	if fs.closed.Load() {
		return ErrClosed
	}
	p := fs.fault.Load()
	if p == nil {
		return nil
	}
	if err := fs.probe(); err != nil {
		return fmt.Errorf("%w: %w (probe: %w)", ErrWrite, *p, err)
	}
	fs.fault.CompareAndSwap(p, nil)
	return nil
}

func (fs *FileStore) probe() error {
	dir := filepath.Join(fs.dir, commitLogDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(dir, "probe.tmp")
	defer os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, 64<<10))
	if err == nil {
		err = fdatasync(f)
	}
	return errors.Join(err, f.Close())
}

// Sessions implements Store.
func (fs *FileStore) Sessions(ctx context.Context) ([]string, error) {
	if fs.closed.Load() {
		return nil, ErrClosed
	}
	entries, err := os.ReadDir(fs.dir)
	if err != nil {
		return nil, fmt.Errorf("journal: list sessions: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Not only directories: what stands in a session directory's
		// place (a symbolic link) opens as damage, and is listed.
		if checkSessionID(e.Name()) != nil {
			continue
		}
		if fs.quarantined(e.Name()) != nil {
			continue // listed below
		}
		ok, err := fs.listed(e.Name())
		if err != nil {
			return nil, err
		}
		if ok {
			ids = append(ids, e.Name())
		}
	}
	// A session whose records are kept in quarantine is damaged, and
	// listed whatever stands in its directory's place.
	fs.quarantine.Range(func(id, _ any) bool {
		ids = append(ids, id.(string))
		return true
	})
	return ids, nil
}

// Delete implements Store.
func (fs *FileStore) Delete(ctx context.Context, id string) error {
	s, err := fs.session(id)
	if err != nil {
		return err
	}
	defer fs.release(s)
	s.mu.Lock()
	req := &appendReq{s: s, gen: s.gen, del: true, done: make(chan error, 1)}
	if err := fs.enqueue(req); err != nil {
		s.mu.Unlock()
		return err
	}
	s.inflight++
	// Appends admitted from now on start a new, empty session.
	s.state, s.damage = stateReady, nil
	s.reservedNext, s.lastMs = 1, 0
	if s.committedNext == 0 {
		s.committedNext = 1
	}
	s.mu.Unlock()
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("journal: delete of %s abandoned, outcome unknown: %w", id, ctx.Err())
	}
}

// Close waits for queued appends, then releases files and ends
// subscriptions. Calls after Close fail with ErrClosed.
func (fs *FileStore) Close() error {
	if fs.closed.Swap(true) {
		return ErrClosed
	}
	fs.qmu.Lock()
	fs.closing = true
	fs.qcond.Broadcast()
	fs.qmu.Unlock()
	<-fs.wdone
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var errs []error
	for fs.openLRU.Len() > 0 {
		s := fs.openLRU.Back().Value.(*session)
		if s.wf != nil {
			errs = append(errs, s.wf.Close())
			s.wf = nil
		}
		fs.closeTail(s)
	}
	if !fs.skipCloseSync.Load() {
		errs = append(errs, fs.syncPoint())
	}
	if fs.log != nil {
		errs = append(errs, fs.log.Close())
		fs.log = nil
	}
	if fs.root != nil {
		errs = append(errs, fs.root.Close())
	}
	if fs.ring != nil {
		errs = append(errs, fs.ring.Close())
	}
	for _, s := range fs.sessions {
		s.mu.Lock()
		for sub := range s.subs {
			sub.end(fmt.Errorf("journal: store closed: %w", ErrClosed))
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Stats are counters of the writer, for benchmarks and tests.
type Stats struct {
	Loaded  int64 // sessions in memory
	Records int64 // records committed
	Rounds  int64 // group commits
	Syncs   int64 // durability barriers: fdatasync, fsync and syncfs calls
	SyncFS  int64 // the syncfs calls among Syncs
	// SyncPoints counts the sync points that retired commit log files.
	SyncPoints int64
	// RingFlushes counts the commit log flushes that went through
	// io_uring (see FlushMode).
	RingFlushes int64
	// Recoveries counts the sessions opened from disk: on their first use,
	// and again after they were dropped from memory (MaxLoadedSessions).
	Recoveries int64
}

// Stats reports the writer's counters.
func (fs *FileStore) Stats() Stats {
	fs.mu.Lock()
	loaded := int64(len(fs.sessions))
	fs.mu.Unlock()
	return Stats{Loaded: loaded, Records: fs.appended.Load(), Rounds: fs.rounds.Load(), Syncs: fs.syncs.Load(), SyncFS: fs.syncfsN.Load(), SyncPoints: fs.syncPointsN.Load(), RingFlushes: fs.ringFlushes.Load(), Recoveries: fs.recoveries.Load()}
}
