// Package journal is the durable, append-only journal of every session:
// one dense sequence per session starting at 1, appended with a
// compare-and-set on the next sequence, read in bounded pages and followed
// live through subscriptions. Store is the contract (journaltest checks
// it); FileStore keeps it in files, MemStore in memory for tests.
//
// This file is the specification of FileStore's on-disk format.
//
// # Files
//
// FileStore is given the data directory's sessions/ directory. Each
// session id is one path element (1..200 bytes, no '/', '\', NUL or
// leading '.'):
//
//	sessions/{id}/journal/{first}.segment          frames, see below
//	sessions/{id}/journal/{first}.segment.torn-{o}  bytes cut by recovery
//	sessions/{id}/checkpoint                       optional, see below
//	sessions/{id}/checkpoint.tmp                   checkpoint being written
//
// {first} is the sequence of the segment's first record as exactly 20
// decimal digits ("00000000000000000001.segment"). Other names in the
// journal directory are ignored.
//
// # Frames
//
// A segment is a concatenation of frames, one record per frame, nothing
// else (no file header, no padding). All integers are little-endian.
//
//	offset  size  field
//	0       4     payload length N (uint32)
//	4       4     CRC32C (Castagnoli) of the N payload bytes
//	8       N     payload
//
// The payload:
//
//	offset  size  field
//	0       1     version, always 1
//	1       1     flags: bit 0 = origin present; other bits must be 0
//	2       8     sequence (uint64)
//	10      8     recorded_at_ms (int64, Unix milliseconds)
//	18      2     kind length K (uint16, 1..65535)
//	20      4     data length D (uint32; 0 = no data)
//	24      K     kind, UTF-8
//	24+K    D     data, raw JSON bytes as given
//	24+K+D  4     origin length O (uint32), only when flag bit 0 is set
//	28+K+D  O     origin, raw JSON bytes
//
// The payload ends exactly after the last field. N is at most
// Options.MaxRecordBytes (64 MiB by default); a longer record is refused
// with ErrTooLarge and a frame announcing more is damage. Within a session
// sequences are dense from 1 across segments in name order, and
// recorded_at_ms never decreases (Append stamps zero as now and raises a
// value below the previous one).
//
// # Writing and durability
//
// One writer goroutine per FileStore takes every queued append of every
// session, writes each session's frames to its last segment with O_APPEND
// writes, then flushes the group with one durability barrier. The group
// must make durable every file written and every directory that gained an
// entry (the journal directory for a new segment; sessions/ and
// sessions/{id}/ when a session's directories were created):
//
//   - When that is at least Options.SyncFSMinFiles (3) files and
//     directories, one syncfs(2) on the sessions/ directory flushes them
//     all. syncfs writes back every dirty page and inode of the file
//     system, waits for the writeback, commits the file system's journal
//     and flushes the device cache, so it makes durable at least what an
//     fdatasync of each file and an fsync of each directory would. Since
//     Linux 5.8 it also reports a writeback error of any file of the file
//     system that happened after the sessions/ directory was opened (the
//     store keeps it open for its lifetime); before 5.8 it returns success
//     regardless, so syncfs is only used when uname(2) reports 5.8 or
//     later, on linux/amd64 and linux/arm64. Every page a group wrote is
//     written back inside its syncfs call, so a writeback error of the
//     group's own files is reported to that group; an error of another
//     file of the file system fails the group too (an append then reports
//     an error although its records may be durable, as with any failed
//     flush). If syncfs is refused (ENOSYS, EPERM) the store flushes file
//     by file from then on.
//   - Otherwise (one segment written, or syncfs unavailable) each file is
//     fdatasync'd and each directory fsync'd, issued concurrently so the
//     file system can merge them; one file's fdatasync does not wait for
//     unrelated dirty data of the file system.
//
// Only then are the appends acknowledged, published to readers and pushed
// to subscribers. Readers never see bytes past the last acknowledged
// frame.
//
// A segment is rolled before a frame that would take it past
// Options.SegmentBytes (64 MiB by default), unless the segment is empty: a
// record never spans segments, so a segment may exceed the bound by one
// record. The new segment is named after the sequence of its first frame.
//
// Back-pressure: an append fails fast with ErrOverloaded when the bytes
// queued for the writer would exceed Options.MaxQueueBytes (64 MiB) in
// total or Options.MaxSessionQueueBytes (8 MiB) for its session; an append
// to an empty queue is always admitted. The writer keeps at most
// Options.MaxOpenFiles (256) segment handles open between group commits,
// closing the least recently used.
//
// # Recovery
//
// A session is opened lazily on first use. Its segments are read in order
// and every frame is checked, except the prefix a matching checkpoint
// vouches for (see Checkpoint). The rules:
//
//   - The first segment must be named 1 and each next segment must be
//     named one past the last sequence of the previous one.
//   - Each frame's checksum must match and its sequence must be the next
//     one expected.
//   - If the final segment ends inside a frame (fewer than 8 header bytes
//     left, or fewer payload bytes than its length says), that incomplete
//     write is cut: the bytes from the frame's offset o to the end are
//     written to "{segment}.torn-{o}" (".{n}" appended when that name is
//     taken) and fsynced, the segment is truncated
//     to o and fsynced, and the directory is fsynced.
//   - Anything else is damage and the session is refused with a
//     *DamagedError naming the file and offset: a complete frame with a bad
//     checksum or an undecodable payload, a sequence that is not dense, a
//     length above the record limit, an incomplete frame in a non-final
//     segment, or an empty non-final segment. Nothing is rewritten and
//     other sessions are not affected.
//
// An empty final segment is valid (a crash after rolling); the next
// append goes into it.
//
// # Checkpoint
//
// sessions/{id}/checkpoint holds an opaque payload the caller derived from
// records 1..through. It is written to checkpoint.tmp, fsynced, renamed and
// the directory fsynced. Layout (little-endian):
//
//	offset  size  field
//	0       8     magic "BRAINCK2"
//	8       4     CRC32C (Castagnoli) of every byte from offset 12 to the end
//	12      8     through (uint64)
//	20      4     stamp count S (uint32)
//	24      16*S  stamps: first sequence of the segment (its name, uint64),
//	              then a size (uint64)
//	24+16S  8     offset of record through's frame in the last stamped
//	              segment (uint64; 0 when S is 0)
//	32+16S  4     payload length P (uint32)
//	36+16S  P     payload
//
// Version 1 ("BRAINCK1", written by earlier releases) has no frame offset
// field; it is still read by ReadCheckpoint but never used to skip frames
// at open.
//
// There is one stamp per segment whose first sequence is <= through, in
// order. Each size is the segment's size when the checkpoint was written,
// except the last stamp's, which is the offset just past record through.
// ReadCheckpoint answers ErrNotFound (the caller rebuilds from the journal)
// when the file is missing, malformed or fails its checksum, or when it is
// stale: through is past the journal's end, the segments with a first
// sequence <= through are not exactly the stamped ones, a stamped segment
// other than the last has a different size, or the last stamped segment is
// shorter than its stamp.
//
// Opening with a checkpoint. When a session is opened and its checkpoint
// (version 2, through >= 1) matches the directory — the segment files
// with a first sequence <= through are exactly the stamped ones, each
// stamped segment but the last has exactly its stamped size, the last is
// at least its stamp, and the frame at the recorded offset is complete,
// passes its checksum, holds sequence through and ends exactly at the
// last stamp — the frames before that end (the covered prefix) are not
// read: they were checked when they were committed or recovered, and the
// checkpoint's checksum and stamps vouch that they are unchanged in name
// and size. Recovery starts at the end of the covered prefix with the
// rules above, expecting sequence through+1, so a torn final write or
// damage after the prefix is handled exactly as without a checkpoint (if
// anything after the prefix is damage, the whole journal is scanned again
// without the checkpoint before the session is refused). The sparse index
// of the covered prefix is built, checking every frame, the first time a
// Read starts inside it; a frame there that fails its checksum fails that
// Read with a *DamagedError (the session stays open). A checkpoint that
// does not match is ignored and every frame is read.
//
// # Memory
//
// An open session keeps its next sequence, last recorded_at_ms, a list of
// its segments, a sparse index (one entry per segment start and then
// every 64 KiB of frames) and the position where the last page read
// stopped, so that Read seeks close to its cursor instead of rescanning;
// it keeps no records in memory. Subscriptions hold at most their backlog
// of live records.
//
// At most Options.MaxLoadedSessions (4096) sessions stay in memory: past
// that bound the least recently used idle session is dropped and opened
// again from disk (recovery, with its checkpoint) on its next use. A
// session is idle when no call is using it, none of its appends or
// deletes is queued, it has no subscription and the writer holds no handle
// of its segment, so only the writer's up to Options.MaxOpenFiles open
// segments may keep a few more sessions loaded.
//
// Recovery and Read scan a segment with positional reads into one pooled
// buffer (64 KiB, doubling up to 1 MiB per read), checking each frame in
// place without per-frame allocations. Read verifies the checksum of
// every frame it passes again; a committed frame that no longer checks out
// fails the Read with an error wrapping a *DamagedError. A page copies
// its records' data into a few shared buffers and shares equal kind
// strings.
package journal
