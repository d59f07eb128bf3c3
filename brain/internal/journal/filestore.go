package journal

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-in-go/brain/brain/internal/uring"
)

// Options configures a FileStore. The zero value (or nil) selects the
// defaults.
type Options struct {
	// SegmentBytes is the size at which a session's segment is rolled
	// (default 64 MiB). A record is never split; a segment holds at least
	// one record.
	SegmentBytes int64
	// MaxRecordBytes bounds one record's encoded payload (default 64 MiB).
	MaxRecordBytes int
	// MaxQueueBytes bounds the frame bytes queued for the writer across all
	// sessions (default 64 MiB).
	MaxQueueBytes int64
	// MaxSessionQueueBytes bounds the frame bytes queued for one session
	// (default 8 MiB).
	MaxSessionQueueBytes int64
	// MaxOpenFiles bounds the segment files the writer keeps open; idle
	// handles are closed least recently used first (default 256).
	MaxOpenFiles int
	// SyncParallelism is how many files of one group commit are flushed
	// concurrently when they are flushed one by one (default 32).
	SyncParallelism int
	// SyncFSMinFiles: a sync point that must flush at least this many
	// segment files and directories makes them durable with one syncfs(2)
	// of the journal's file system instead of one fdatasync/fsync each
	// (default 3; negative never uses syncfs). syncfs is used only on Linux 5.8 or
	// later, where it reports writeback errors; elsewhere every file is
	// flushed on its own.
	SyncFSMinFiles int
	// CommitLogBytes: once the current commit log file holds this many
	// bytes, the writer takes a sync point (default 16 MiB).
	CommitLogBytes int64
	// SyncPointInterval: the writer takes a sync point at the first group
	// commit this long after the previous one (default 2 s).
	SyncPointInterval time.Duration
	// MaxLoadedSessions bounds the sessions kept in memory (their
	// sequence counters, segment lists and sparse indexes). Beyond it the
	// least recently used idle session is dropped and recovered from disk
	// on its next use (default 4096). A session is idle when no call is
	// using it, none of its appends or deletes is queued, it has no
	// subscription and the writer holds no handle of its segment.
	MaxLoadedSessions int
	// OnCommit, if set, is called by the writer after each durable group
	// commit with the records it made durable and how long the commit
	// log's flush took. It must not block.
	OnCommit func(records int, sync time.Duration)
	// OnDurable, if set, is called by the writer with each session's
	// records once they are durable, before they are acknowledged. The
	// records' Data aliases the writer's buffers: it must be copied to be
	// kept. It must not block.
	OnDurable func(session string, recs []Record)
	// OnReplay, if set, is called at open with each session's records
	// that the open replays from the commit log (records appended after
	// the last sync point), before the sync point that retires those log
	// files. Records OnDurable copies elsewhere without a flush of their
	// own are made durable there by this call (an error fails the open).
	// The records' Data aliases the replay's buffers.
	OnReplay func(session string, recs []Record) error
	// BeforeRetire, if set, is called at every sync point after the
	// segments are durable and before log files are retired: what
	// OnDurable copied elsewhere must be durable when it returns, since
	// the commit log stops holding it. An error fails the sync point and
	// the log files stay.
	BeforeRetire func() error
	// Flush selects how the writer waits for the commit log's flush
	// (doc.go, "Flushing without holding a P"); the zero value is
	// FlushAuto.
	Flush FlushMode
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.SegmentBytes <= 0 {
		v.SegmentBytes = 64 << 20
	}
	if v.MaxRecordBytes <= 0 {
		v.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if v.MaxQueueBytes <= 0 {
		v.MaxQueueBytes = 64 << 20
	}
	if v.MaxSessionQueueBytes <= 0 {
		v.MaxSessionQueueBytes = 8 << 20
	}
	if v.MaxOpenFiles <= 0 {
		v.MaxOpenFiles = 256
	}
	if v.SyncParallelism <= 0 {
		v.SyncParallelism = 32
	}
	if v.SyncFSMinFiles == 0 {
		v.SyncFSMinFiles = 3
	}
	if v.CommitLogBytes <= 0 {
		v.CommitLogBytes = 16 << 20
	}
	if v.SyncPointInterval <= 0 {
		v.SyncPointInterval = 2 * time.Second
	}
	if v.MaxLoadedSessions <= 0 {
		v.MaxLoadedSessions = 4096
	}
	return v
}

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
	needSyncPoint bool // a log write failed: take a sync point before the next commit
	syncPointErr  error
	resync        bool        // a sync point's flush failed: rewrite the segments from the log first
	repaired      atomic.Bool // a reader repaired a segment from the log: resync at the next sync point
	suspect       atomic.Bool // a write or flush failed since the last sync point retired the log
	lastSyncPoint time.Time
	skipCloseSync atomic.Bool
	// segWriteHook, when set by a test, returns the part of each segment
	// write that reaches the file (simulating lost page-cache writes).
	segWriteHook func([]byte) []byte
	// ring flushes the commit log when io_uring is available and the
	// flush mode allows it (nil: fdatasync on a goroutine); sched tells
	// the writer when to use it (FlushAuto).
	ring        *uring.Ring
	sched       schedWatch
	ringFlushes atomic.Int64
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

// indexEntry is a sparse index point: record seq starts at off in segs[seg].
type indexEntry struct {
	seq uint64
	seg int
	off int64
}

// indexEveryBytes is the spacing of sparse index entries within a segment.
const indexEveryBytes = 64 << 10

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
	fs.logNext = 1
	fs.dirty = make(map[string]bool)
	fs.lastSyncPoint = time.Now()
	if err := fs.replayLog(); err != nil {
		if fs.root != nil {
			fs.root.Close()
		}
		return nil, err
	}
	if fs.opts.Flush != FlushPlain {
		// Where io_uring is missing or refused, flushes go through
		// fdatasync(2) on a goroutine.
		fs.ring, _ = uring.New()
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

// Read implements Store.
func (fs *FileStore) Read(ctx context.Context, id string, after uint64, maxRecords, maxBytes int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := fs.read(id, after, maxRecords, maxBytes)
	var de *DamagedError
	if errors.As(err, &de) && fs.repairForRead(id) {
		return fs.read(id, after, maxRecords, maxBytes)
	}
	return out, err
}

// repairForRead repairs id's segments from the commit log when no append
// of it is queued (see repairFromLogs), and reports whether it rewrote
// anything.
func (fs *FileStore) repairForRead(id string) bool {
	s, err := fs.readySession(id)
	if err != nil {
		return false
	}
	defer fs.release(s)
	defer s.mu.Unlock()
	if s.inflight > 0 {
		return false
	}
	n, err := fs.repairFromLogs(id)
	if err != nil || n == 0 {
		return false
	}
	// The index and any kept bytes stay valid: the repair wrote the
	// acknowledged frames back where they were.
	return true
}

// read is one attempt of Read.
func (fs *FileStore) read(id string, after uint64, maxRecords, maxBytes int) ([]Record, error) {
	maxRecords, maxBytes = pageLimits(maxRecords, maxBytes)
	s, err := fs.readySessionKeep(id, after == 0)
	if err != nil {
		return nil, err
	}
	defer fs.release(s)
	last := s.committedNext - 1
	if after >= last {
		s.mu.Unlock()
		return nil, nil
	}
	if s.cold.seq != 0 && after+1 < s.cold.seq {
		if err := fs.verifyColdKeep(s, true); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	if out, ok := s.warmPage(after, last, maxRecords, maxBytes); ok {
		s.mu.Unlock()
		return out, nil
	}
	segs := slices.Clone(s.segs)
	warm := s.warm
	start := s.seek(after + 1)
	epoch := s.epoch
	s.mu.Unlock()

	pg := newPage(min(uint64(maxRecords), last-after))
	pg.after, pg.last, pg.maxRecords, pg.maxBytes = after, last, maxRecords, maxBytes
	for si := start.seg; si < len(segs); si++ {
		off := int64(0)
		if si == start.seg {
			off = start.off
		}
		done, err := fs.readSegment(s, si, segs[si], warm.seg(segs[si].first), off, pg)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	if pg.hint.seq != 0 {
		// Where the next page starts is remembered so that paging through
		// a session does not rescan from an index point.
		s.mu.Lock()
		if s.epoch == epoch {
			s.hint = pg.hint
		}
		s.mu.Unlock()
	}
	if warm != nil && len(pg.out) > 0 {
		// A page past the warm prefix drops it: the reader has moved on.
		end := pg.out[len(pg.out)-1].Sequence
		s.mu.Lock()
		if s.warm == warm && s.epoch == epoch && end+1 >= warm.next {
			s.warm = nil
			warm.release()
		}
		s.mu.Unlock()
	}
	return pg.out, nil
}

// page builds the records of one Read: the byte fields of its records are
// copied into shared arenas (or are slices of kept bytes) and equal kinds
// share one string, so a page costs a few allocations rather than several
// per record.
type page struct {
	out      []Record
	bytes    int
	arena    []byte
	kinds    map[string]string
	lastKind string

	after, last          uint64 // the Read's records are after..last
	maxRecords, maxBytes int
	hint                 indexEntry // where the next page starts, when a bound stopped this one
}

const pageArenaBytes = 32 << 10

func newPage(records uint64) *page {
	return &page{out: make([]Record, 0, records)}
}

// take adds the record of the frame at `at` of segment si (payload p, n
// bytes) unless the page is full, and reports whether the page is done.
// kept says p lies in bytes a verification checked and kept: they are
// never written again, so p is not checked a second time and the record's
// byte fields are slices of it.
func (pg *page) take(si int, at int64, p []byte, n int, kept bool) (bool, error) {
	if len(pg.out) > 0 && pg.bytes+n > pg.maxBytes {
		pg.hint = indexEntry{seq: leUint64(p[2:]), seg: si, off: at}
		return true, nil
	}
	var seq uint64
	if kept {
		seq = pg.addKept(p, n)
	} else {
		var err error
		if seq, err = pg.add(p, n); err != nil {
			return true, err
		}
	}
	if seq >= pg.last {
		return true, nil
	}
	if len(pg.out) >= pg.maxRecords {
		pg.hint = indexEntry{seq: seq + 1, seg: si, off: at + int64(n)}
		return true, nil
	}
	return false, nil
}

// add decodes payload p (a frame of n bytes) into the page, copying its
// byte fields.
func (pg *page) add(p []byte, n int) (uint64, error) {
	v, err := parsePayload(p)
	if err != nil {
		return 0, err
	}
	r := Record{Sequence: v.seq, RecordedAtMs: v.ms, Kind: pg.kind(v.kind)}
	if v.data != nil {
		r.Data = pg.copy(v.data)
	}
	if v.hasOrigin {
		r.Origin = pg.copy(v.origin)
	}
	pg.bytes += n
	pg.out = append(pg.out, r)
	return v.seq, nil
}

// addKept is add for a payload checkKept accepted: it reads the fields
// where that check found them, straight into the page's next record.
func (pg *page) addKept(p []byte, n int) uint64 {
	if len(pg.out) == cap(pg.out) {
		pg.out = append(pg.out, Record{})
	} else {
		pg.out = pg.out[:len(pg.out)+1]
	}
	// The slot was never written: it is zero already.
	r := &pg.out[len(pg.out)-1]
	setKept(r, p)
	pg.bytes += n
	return r.Sequence
}

// copy returns a copy of b (non-nil, capacity capped) from the arena.
func (pg *page) copy(b []byte) []byte {
	if len(b) > cap(pg.arena)-len(pg.arena) {
		pg.arena = make([]byte, 0, max(pageArenaBytes, len(b)))
	}
	at := len(pg.arena)
	pg.arena = append(pg.arena, b...)
	return pg.arena[at : at+len(b) : at+len(b)]
}

// kind returns b as a string shared by every equal kind of the page.
func (pg *page) kind(b []byte) string {
	if string(b) == pg.lastKind {
		return pg.lastKind
	}
	k, ok := pg.kinds[string(b)]
	if !ok {
		k = string(b)
		if pg.kinds == nil {
			pg.kinds = make(map[string]string)
		}
		if len(pg.kinds) < 256 {
			pg.kinds[k] = k
		}
	}
	pg.lastKind = k
	return k
}

// readSegment adds to pg the frames of seg (the si-th segment) from off on
// whose sequence is after pg.after, until the page is done or the
// committed end is reached. warm holds the segment's kept bytes, if any.
func (fs *FileStore) readSegment(s *session, si int, seg segInfo, warm []byte, off int64, pg *page) (bool, error) {
	path := func() string { return filepath.Join(s.dir, "journal", segmentName(seg.first)) }
	// Frames kept by a verification are already checked.
	for off < int64(len(warm)) {
		n := int(binary.LittleEndian.Uint32(warm[off:]))
		size := frameHeaderSize + n
		p := warm[off+frameHeaderSize : off+int64(size) : off+int64(size)]
		seq := leUint64(p[2:])
		if seq > pg.last {
			return true, nil
		}
		if seq > pg.after {
			if done, _ := pg.take(si, off, p, size, true); done {
				return true, nil
			}
		}
		off += int64(size)
	}
	if off >= seg.size && seg.size > 0 && warm != nil {
		return false, nil
	}
	f, err := os.Open(path())
	if err != nil {
		return false, fmt.Errorf("journal: read %s: %w", path(), err)
	}
	defer f.Close()
	sc := newFrameScanner(f, off, seg.size, fs.opts.MaxRecordBytes)
	defer sc.release()
	for {
		at, p, n, err := sc.next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fs.readDamage(s, path(), at, err)
		}
		if len(p) < payloadFixed {
			return false, fs.readDamage(s, path(), at, errBadPayload)
		}
		seq := leUint64(p[2:])
		if seq <= pg.after {
			continue
		}
		if seq > pg.last {
			return true, nil
		}
		done, err := pg.take(si, at, p, n, false)
		if err != nil {
			return false, fs.readDamage(s, path(), at, err)
		}
		if done {
			return true, nil
		}
	}
}

// readDamage reports a frame that failed to read back: committed bytes
// that no longer check out are damage (a *DamagedError); other errors
// (I/O) are wrapped as they are.
func (fs *FileStore) readDamage(s *session, path string, at int64, err error) error {
	if errors.Is(err, errChecksum) || errors.Is(err, errBadPayload) || errors.Is(err, errFrameSize) ||
		errors.Is(err, errShortFrame) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("journal: read %s: %w", path,
			&DamagedError{Session: s.id, File: path, Offset: at, Reason: err.Error()})
	}
	return fmt.Errorf("journal: read %s at offset %d: %w", path, at, err)
}

// seek returns the index point at or before seq. s.mu must be held.
func (s *session) seek(seq uint64) indexEntry {
	i, found := slices.BinarySearchFunc(s.index, seq, func(e indexEntry, t uint64) int {
		switch {
		case e.seq < t:
			return -1
		case e.seq > t:
			return 1
		}
		return 0
	})
	if !found {
		i--
	}
	e := indexEntry{seq: 1}
	if i >= 0 {
		e = s.index[i]
	}
	if h := s.hint; h.seq != 0 && h.seq <= seq && h.seq > e.seq {
		e = h
	}
	return e
}

// verifyCold checks the prefix a checkpoint vouched for at open, when it
// has not been read yet (indexCold). A damaged prefix refuses the whole
// session from then on, exactly as damage found at open does: every
// later call answers its *DamagedError and nothing is appended. s.mu is
// held.
func (fs *FileStore) verifyCold(s *session) error { return fs.verifyColdKeep(s, false) }

// verifyColdKeep is verifyCold; with keep, the bytes read are kept in
// s.warm (within the store's budget) for the Reads that follow.
func (fs *FileStore) verifyColdKeep(s *session, keep bool) error {
	if s.cold.seq == 0 {
		return nil
	}
	err := fs.indexCold(s, keep)
	var de *DamagedError
	if errors.As(err, &de) {
		s.resetIndex()
		s.state, s.damage = stateDamaged, de
		return de
	}
	return err
}

// Verify opens session id and checks every frame of its journal that was
// not checked since the store opened (the prefix its checkpoint vouched
// for), so that damage there is found before anything depends on it. It
// answers the session's *DamagedError when the journal is damaged.
func (fs *FileStore) Verify(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := fs.readySession(id)
	if err != nil {
		return err
	}
	defer fs.release(s)
	defer s.mu.Unlock()
	return fs.verifyCold(s)
}

// indexCold reads the prefix a checkpoint vouched for at open, checking
// every frame as recovery would, and completes the sparse index. s.mu is
// held.
func (fs *FileStore) indexCold(s *session, keep bool) error {
	var idx []indexEntry
	expect := uint64(1)
	limitOf := func(si int) int64 {
		if si == s.cold.seg {
			return s.cold.off
		}
		return s.segs[si].size
	}
	var warm *warmSet
	if keep {
		var total int64
		for si := 0; si <= s.cold.seg; si++ {
			total += limitOf(si)
		}
		warm = fs.reserveWarm(total)
	}
	for si := 0; si <= s.cold.seg; si++ {
		seg := s.segs[si]
		limit := limitOf(si)
		path := filepath.Join(s.dir, "journal", segmentName(seg.first))
		f, err := os.Open(path)
		if err != nil {
			warm.release()
			return fmt.Errorf("journal: read %s: %w", path, err)
		}
		if warm != nil {
			// One read of the whole prefix of the segment, checked in
			// memory and kept.
			b, c, err, rerr := readChecked(f, limit, expect, fs.opts.MaxRecordBytes, si, 0, idx)
			f.Close()
			if rerr != nil {
				warm.release()
				return fs.readDamage(s, path, 0, rerr)
			}
			first := expect
			idx, expect = c.index, c.next
			if err != nil {
				var se *seqError
				if errors.As(err, &se) {
					err = fmt.Errorf("%w: sequence is not %d", errBadPayload, se.want)
				}
				warm.release()
				return fs.readDamage(s, path, c.end, err)
			}
			warm.segs = append(warm.segs, warmSeg{first: seg.first, n: c.next - first, b: b})
			continue
		}
		sc := newFrameScanner(f, 0, limit, fs.opts.MaxRecordBytes)
		for {
			at, p, _, err := sc.next()
			if err == io.EOF {
				break
			}
			if err == nil && !payloadOK(p) {
				_, err = parsePayload(p)
			}
			if err == nil && leUint64(p[2:]) != expect {
				err = fmt.Errorf("%w: sequence is not %d", errBadPayload, expect)
			}
			if err != nil {
				sc.release()
				f.Close()
				return fs.readDamage(s, path, at, err)
			}
			if n := len(idx); at == 0 || n == 0 || idx[n-1].seg != si || at-idx[n-1].off >= indexEveryBytes {
				idx = append(idx, indexEntry{seq: expect, seg: si, off: at})
			}
			expect++
		}
		sc.release()
		f.Close()
	}
	if expect != s.cold.seq {
		warm.release()
		seg := s.segs[s.cold.seg]
		path := filepath.Join(s.dir, "journal", segmentName(seg.first))
		return fmt.Errorf("journal: read %s: %w", path, &DamagedError{Session: s.id, File: path, Offset: s.cold.off,
			Reason: fmt.Sprintf("the checkpoint's prefix holds %d records, want %d", expect-1, s.cold.seq-1)})
	}
	for _, e := range s.index {
		if e.seq >= s.cold.seq {
			idx = append(idx, e)
		}
	}
	s.index = idx
	if warm != nil {
		warm.next = s.cold.seq
		s.warm.release()
		s.warm = warm
	}
	s.cold = indexEntry{}
	return nil
}

// resetIndex forgets s's segments and index. s.mu is held.
func (s *session) resetIndex() {
	s.warm.release()
	s.warm = nil
	s.segs, s.index = nil, nil
	s.hint, s.cold, s.tail = indexEntry{}, indexEntry{}, indexEntry{}
	s.epoch++
}

// addIndex records that seq starts at off in the last segment.
func (s *session) addIndex(seq uint64, off int64) {
	seg := len(s.segs) - 1
	if n := len(s.index); off == 0 || n == 0 || s.index[n-1].seg != seg || off-s.index[n-1].off >= indexEveryBytes {
		s.index = append(s.index, indexEntry{seq: seq, seg: seg, off: off})
	}
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
		if e.IsDir() && checkSessionID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
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
