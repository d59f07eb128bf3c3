package journal

import "time"

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
	// the last sync point, including those of a session whose directory
	// it cannot write into and keeps in quarantine), before the sync point
	// that retires those log files. Records OnDurable copies elsewhere
	// without a flush of their own are made durable there by this call (an
	// error fails the open).
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
