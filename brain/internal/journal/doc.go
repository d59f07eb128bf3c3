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
//	sessions/{id}/journal/{first}.segment.torn-{o}  bytes cut by recovery or replay
//	sessions/{id}/checkpoint                       optional, see below
//	sessions/{id}/checkpoint.tmp                   left by earlier releases; never read
//	sessions/.commitlog/{n}.log                    shared commit log, see below
//	sessions/.commitlog/{n}.log.torn-{o}           bytes cut by replay
//	sessions/.commitlog/syncpoint                  sync point marker
//	sessions/.commitlog/syncpoint.tmp              marker being written
//	sessions/.commitlog/probe.tmp                  Healthy's probe write, removed at once
//	sessions/.trash/                               created at open and kept
//	sessions/.trash/{id}/                          a deleted session being removed, see Sync points
//	sessions/.quarantine/{id}/{n}.log              entries replay could not write, see Commit log
//
// {first} is the sequence of the segment's first record as exactly 20
// decimal digits ("00000000000000000001.segment"); {n} is a log file
// number (from 1) in the same form. Other names in the journal and
// commit log directories are ignored, and so is a segment or log file
// that is not a regular file. A checkpoint that is not a regular file (a
// named pipe, a device, a symbolic link when it is written) is no
// checkpoint: it is never read or written through, and the next
// checkpoint replaces it; a sync point marker that is not one fails the
// open. A session directory that is not a directory (a symbolic link, to
// a directory elsewhere or to nothing) is listed and opens as damaged
// (DamagedError naming it): nothing is read or written through it, and
// deleting the session removes the link, not what it names. Nothing waits
// for the other end of a named pipe. ".commitlog", ".trash" and
// ".quarantine" are never session ids (ids cannot start with '.').
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
// session (a group commit, or round) and:
//
//  1. writes each session's frames to its last segment with O_APPEND
//     writes (into the page cache; segments are not flushed here);
//  2. appends one commit log entry per run of those frames (see Commit
//     log) to the current log file with a single write, and makes it
//     durable with one fdatasync of that file — the round's only
//     durability barrier (plus, when the round starts a new log file, one
//     fsync of sessions/.commitlog/, and once per process one of
//     sessions/ if it had to create .commitlog/).
//
// Only then are the appends acknowledged, published to readers and pushed
// to subscribers. Readers never see bytes past the last acknowledged
// frame. An acknowledged record is durable because its frame bytes are in
// a log entry that was fdatasync'd (with the log file's size and, for a
// new file, its directory entry) before the acknowledgement; its segment
// may still be only in the page cache, but replay (below) rebuilds the
// segment from the log after any crash.
//
// Flushing without holding a P. A goroutine inside fdatasync(2) keeps its
// P (one of GOMAXPROCS) until the runtime's monitor notices the call has
// lasted longer than one of its ticks; a flush of a few hundred
// microseconds mostly ends before that, so back-to-back group commits
// leave the rest of the process one P short. While goroutines wait for a
// P (the runtime's scheduling latency, sampled every 50 ms, averaged at
// least 100 µs), the writer therefore submits the log's fdatasync to
// io_uring (package uring) and waits for its completion through the
// runtime's poller, holding no P; otherwise, and where io_uring is
// unavailable, it calls fdatasync(2) on a goroutine of its own, which
// answers sooner on an idle process. Both are the same flush with the same
// result. Options.Flush forces either. The ring is set up at the first
// flush that would go through it, so a store opened only to be read sets
// up none.
//
// Sync points. The segments are made durable later, at a sync point,
// taken by the writer when the current log file holds
// Options.CommitLogBytes (16 MiB), at the first round
// Options.SyncPointInterval (2 s) after the previous sync point, before
// every Delete, at Close, and at open after a replay:
//
//  1. every segment file and directory written or created since the
//     previous sync point is made durable: one syncfs(2) on the sessions/
//     directory when they are at least Options.SyncFSMinFiles (3) paths
//     and syncfs reports errors here (Linux 5.8 or later, amd64/arm64;
//     syncfs writes back every dirty page and inode of the file system,
//     commits its journal and flushes the device cache, and since 5.8
//     reports a writeback error of any file after the store opened
//     sessions/, which it keeps open), otherwise one fdatasync per file and
//     one fsync per directory, issued concurrently (ENOSYS or EPERM from
//     syncfs selects that for good);
//  2. the current log file is closed and the marker is replaced (written to
//     syncpoint.tmp, fsynced, renamed, directory fsynced) with the number
//     of the next log file to be created: every log file numbered below it
//     is no longer needed;
//  3. those log files are deleted (no fsync needed: the marker already
//     retires them, and replay deletes any left over).
//
// Between steps 1 and 2 the writer calls Options.BeforeRetire, if set:
// a store that copies records elsewhere from Options.OnDurable without a
// flush of its own (the idempotency log copies its claims and answers)
// makes those copies durable there, since the log files stop holding the
// records. A failure retires nothing and fails the sync point (and so the
// round or Delete that needed it), without sticking.
//
// Deleting a log file is safe because every frame it holds was written to
// its segment before the log write, and step 1 made those segments (and
// their directory entries) durable before step 2 retired the file. A
// failure in step 1 retires nothing and does not stick: the failed flush
// may have dropped dirty pages (a later flush then reports success without
// writing them), so the next sync point (it is tried once more at once,
// since a file's writeback error is also reported once to a later flush)
// first writes every frame of the live log files into its segment again
// at its offset, flushes every such segment (fsync) and its directories,
// and reads those frames back past the page cache (O_DIRECT, where the
// platform has it); only when they match are the log files retired.
// Until then they stay, and the next open replays them. Where the failed
// flush cannot be repaired from user space while the file system stays
// mounted (ext4's dioread_nolock can leave the blocks marked unwritten),
// the read-back keeps failing and the log files are kept for the next
// open. When no log file is live (a round could not create one), every
// acknowledged frame is durable already and the paths to flush belong to
// rounds that were not acknowledged: a failed flush fails the round or
// Delete that needed the sync point, and the next sync point flushes the
// same paths again. After a failed log write or fdatasync the writer truncates the
// log file back to where the failed round began (best effort: a replay
// after the process stops finds nothing of the round), moves to a new log
// file and takes a sync point before the next round logs anything, so the
// failed file is retired only once the segments, as readers will see
// them, are durable. Delete takes a sync point before it removes the session's
// directory, so no retained log entry names a deleted session. When that
// sync point made the segments durable but cannot write the marker (a
// full disk), Delete retires the log files by removing them in number
// order and fsyncing sessions/.commitlog/ instead, which needs no free
// block: a user frees space by deleting sessions. A crash part way leaves
// a suffix of them, whose frames the durable segments already hold; the
// marker lags until the next sync point that can write it. Delete then
// renames the directory to sessions/.trash/{id}, fsyncs sessions/, and
// only then removes the files: a crash during a delete leaves the session
// whole or gone, never a journal missing some of its segments. Open
// removes whatever a delete cut short left in .trash/ and creates .trash/
// when it is missing, and keeps it, so that a delete on a full disk (no
// block or inode for a new directory) still needs only a rename. (Where
// .trash/ does not exist and cannot be created, the directory is removed
// in place.)
//
// Write failures. An append whose frames could not be written or made
// durable (a full or failing disk) fails with an error wrapping ErrWrite
// and the errno; nothing of it is acknowledged, its session is reloaded
// from disk on next use, and later appends are tried again (after the
// sync point described above). A round whose log write or fdatasync
// failed cuts every segment it wrote back to its size before the round
// (best effort), so that no frame of a failed append is found later. A
// round whose log entries were flushed but one of whose segment writes
// failed (the disk filled while the log file had its space reserved) fails
// whole the same way, and the round's entries in the log file are
// overwritten with zero bytes (which end the log, as the unused part of a
// preallocated file does) and flushed before the round answers, so that
// neither replay nor a rewrite from the log brings back a frame of a
// failed append; the file keeps the blocks reserved for it.
// When the failed append was a session's first and its directory holds
// nothing but empty segments, the directory is removed. Healthy answers
// the last failure until a later round commits or a probe write (64 KiB
// to .commitlog/probe.tmp, fdatasync'd, removed) succeeds.
//
// Pages dropped after a failed writeback. A page whose writeback failed is
// clean, and the kernel may drop it under memory pressure; a read then
// answers what the device holds, not the acknowledged frames. While log
// files are live, a session whose load finds damage or a torn final frame
// (frames are written whole and a failed round is cut back, so outside a
// crash a torn tail is lost pages), or a Read that meets a frame that does
// not check out (with no append of the session queued), first writes that
// session's logged frames into its segments again where the bytes differ,
// then tries once more. After a write or flush failure, until a sync point
// retires the log, a load does so before it reads, so that a frame whose
// header was lost is not cut as a torn tail; each such load reads the live
// log files once (about Options.CommitLogBytes). The next sync point then
// rewrites, flushes and reads back every logged frame as after a failed
// flush. Damage the live log files do not cover is damage.
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
// # Commit log
//
// A log file is a concatenation of entries (no header, no padding between
// them), followed by zero bytes when it was preallocated: on Linux a new
// log file reserves min(Options.CommitLogBytes, 16 MiB) bytes up front
// (fallocate(2); where that fails it grows with its writes), and each
// round writes its entries at the end of the ones before it (pwrite), so
// that a round's fdatasync writes into blocks the file already has,
// with no file size to update. All integers are little-endian.
//
//	offset  size  field
//	0       4     entry length L: bytes from offset 8 to the end of the entry
//	4       4     CRC32C (Castagnoli) of those L bytes
//	8       1     entry type, always 1 (frames)
//	9       1     session id length I (1..200)
//	10      8     F: first sequence of the segment the frames belong to (its name)
//	18      8     O: offset of the first frame in that segment
//	26      I     session id
//	26+I    L-18-I frames: one or more complete segment frames, byte for byte
//	              as written to the segment at offset O
//
// The frames of an entry have consecutive sequences; the first is at
// least F, and is F when O is 0. A run of frames is cut into entries of
// at most 1 MiB of frames unless a single frame is larger, so L is at most
// 18 + 200 + 1 MiB + 8 + max(MaxRecordBytes, 64 MiB); a larger L is
// damage. A round appends its entries in order; within a session they are
// in sequence order.
//
// The sync point marker sessions/.commitlog/syncpoint is 20 bytes:
//
//	offset  size  field
//	0       8     magic "BRAINSP1"
//	8       4     CRC32C (Castagnoli) of bytes 12..19
//	12      8     first log file number still needed (uint64)
//
// A missing marker means 1. A marker that is not exactly this (bad magic,
// length or checksum) refuses the open with a *LogDamagedError.
//
// Replay. OpenFileStore replays the log before any session is opened:
// log files numbered below the marker are deleted unread; the others are
// read in number order and each entry in order, which puts frames F/O of
// session id in place:
//
//   - the session and journal directories and the segment file are created
//     when missing;
//   - if the segment holds the entry's bytes at O already (byte for byte),
//     nothing is written;
//   - if it ends exactly at O, the frames are written there;
//   - if it holds other or fewer bytes from O on (a torn or lost segment
//     tail after a crash), the bytes from O to its end are cut and kept in
//     "{segment}.torn-{O}" as recovery does, and the frames are written at O;
//   - if it is shorter than O, the store refuses to open with a
//     *LogDamagedError naming the log file and the entry's offset (durable
//     segment bytes before the entry were lost);
//   - if the session or journal directory is not a directory (a symbolic
//     link put in its place while the store was down), nothing is written
//     through it: the entry is kept, byte for byte, in quarantine (below),
//     and the session opens as damaged while every other session opens.
//
// Quarantine. The entries of such a session found in log file {n} are
// written, in order and in this log format, to
// sessions/.quarantine/{id}/{n}.log (a temporary file, fsynced, renamed,
// the directory fsynced; .quarantine/ and .quarantine/{id}/ are created,
// and their parents fsynced, when missing, and a non-directory in their
// place fails the open), before the sync point that retires the log
// file: they may be the only copy of the session's last acknowledged
// records. Replaying the same log file again writes the same file again.
// While a session has a quarantine directory, it is listed (whatever
// stands in its directory's place, or nothing) and refused with a
// *DamagedError naming its directory, whose reason names the quarantine
// directory. At each open, before the log is replayed, the entries kept
// for a session whose directory is a directory again (the directory the
// link named moved back into its place) are written into it with the
// rules of replay, in log file order (not handed to Options.OnReplay a
// second time), and its quarantine directory is removed (and
// .quarantine/ fsynced) once the sync point that follows has made its
// segments durable; when that fails (the segments do not match the
// entries: a segment shorter than an entry's offset), the session stays
// damaged, its reason says why, and the entries stay. Deleting the
// session removes its quarantine directory (fsyncing .quarantine/)
// before its directory, discarding the records kept.
//
// Replay is idempotent: running it again after a crash during replay
// writes nothing new. Each entry's records are handed to
// Options.OnReplay, if set, as they are replayed (or quarantined). Then a sync point makes every segment an entry named
// durable (whether or not replay wrote to it: after a process crash the
// frames may be in the page cache only) and retires the log files. When
// only the marker cannot be written (a full disk), the store opens all the
// same with the log files still live: the segments are durable, and a
// later sync point retires them. The
// per-session recovery rules below run afterwards, lazily, on segments
// that hold every acknowledged record; frames in a segment past the last
// entry (written before a log write that never completed) are judged by
// those rules like any other.
//
// Zero bytes after the last entry are the unused part of a preallocated
// file (or a size update that outran the data): where an entry would
// start, nothing but zero bytes to the end of the file ends the log, and
// nothing is cut or kept.
//
// Damage in the log. An entry that does not decode is an incomplete
// write, cut short by a crash (or a failed write, after which the writer
// moved to a new file), when it shows how such a write looks: fewer than
// 8 bytes left, L past the end of the file or past its last byte that is
// not zero (the blocks a write did not reach read as zero in a
// preallocated file), or a run of zeros where a block of the write is
// missing: a whole 512-byte sector at a multiple of 512 in the file, or
// the entry's bytes from its offset to the next such boundary. (A record
// never holds zero bytes that long: its kind, data and origin are UTF-8
// and JSON.) Such a write is cut: its bytes from the entry's offset to the
// end of the 512-byte sector holding the last byte that is not zero (or
// the end of the file) are written to "{log}.torn-{o}" (".{n}" appended
// when taken) and fsynced, the log is truncated at the offset and
// fsynced, and the directory fsynced. This is accepted at the end of any
// log file. An entry whose L runs past those bytes while a run of its own
// frames from its start ends within them, passes the entry's checksum
// and decodes as an entry of that length is no such write (the checksum
// covers the whole entry, so a part of one never passes it): its length
// field was damaged, and it is damage like the rest. Any other entry that does not check out (checksum, type,
// lengths, session id, or its frames: checksum, payload, sequences)
// refuses the whole store: OpenFileStore returns a *LogDamagedError
// (wrapping ErrLogDamaged) with the log file and the entry's offset, and
// nothing after it is replayed or rewritten. The store cannot tell which
// session a corrupt entry belonged to (its id is under the same
// checksum), and opening without it would silently drop an acknowledged
// record, so an operator must decide (for example remove the log file
// after checking the sessions it names).
//
// # Recovery
//
// A session is opened lazily on first use, after replay. Its segments are read in order
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
//     to o and fsynced, and the directory is fsynced. When the bytes
//     cannot be kept (a full disk), the copy is removed, nothing is cut
//     and the open fails with the error; the next use tries again.
//   - So is a tail of nothing but zero bytes where the next frame would
//     start in the final segment, however long, cut and kept the same
//     way: segments are not preallocated, but a crash can leave a file's
//     new size durable without the data of a write that was never
//     acknowledged (XFS, ext4 in some modes); every acknowledged frame is
//     in the segment or restored by replay, so such zeros hold nothing
//     acknowledged. Zeros that a byte other than zero follows are damage,
//     as below (a frame's length is never zero, so they are no frame and
//     no incomplete write of one).
//   - So is a frame that does not check out after whose last byte that is
//     not zero the final segment holds nothing but zeros, when its length
//     says it ends past the 512-byte sector (at a multiple of 512 in the
//     file) holding that byte: the same crash with only the first sectors
//     of the write on disk. (The bytes of a write up to a sector boundary
//     reach the disk whole, so a frame that ends within sectors holding
//     data was written whole, and is damage when it does not check out.)
//   - A segment is not flushed when the next one is created: a round that
//     rolls creates the next segment before it writes its frames, and
//     segments are made durable only at sync points. So a crash can leave
//     a segment that is not the last with such an incomplete or zero tail
//     while every segment after it holds nothing (empty or nothing but
//     zero bytes); nothing of that round was acknowledged (replay would
//     have restored it). The tail is cut and kept as above, and the
//     segments after it are removed (last first) and the directory
//     fsynced. When a segment after it holds anything, the tail is damage.
//   - Anything else is damage and the session is refused with a
//     *DamagedError naming the file and offset: a complete frame with a bad
//     checksum or an undecodable payload, a sequence that is not dense, a
//     length above the record limit, an incomplete frame in a non-final
//     segment followed by one holding anything, or an empty non-final
//     segment. So is a final frame whose length says it ends past the file
//     (or past the sector holding its last byte that is not zero, with
//     only zeros after it) while its payload, taken at the
//     length its own fields (kind, data, origin) give, ends within the file
//     and passes the frame's checksum: a complete frame whose length field
//     was damaged, which an incomplete write cannot look like. Nothing is
//     rewritten and other sessions are not affected.
//
// An empty final segment is valid (a crash after rolling); the next
// append goes into it. An empty final segment (not the first) named past
// the next expected sequence, or one holding nothing but zero bytes, is
// removed and the directory fsynced: it was created by a roll whose
// records never became durable (acknowledged ones are restored by
// replay), so it holds nothing.
//
// A session directory that holds no record (a create cut short after the
// first append made the directory and before its record was durable
// leaves nothing, an empty journal directory or an empty first segment)
// is a session that does not exist: its first open finds no record and,
// when nothing of the session is queued for the writer and the directory
// holds nothing but empty segments, removes the directory (not fsynced: a
// crash that brings it back leaves it to be removed again). Sessions does
// not list such a directory, nor one whose first segment ends inside its
// first frame (a torn first record, which an open cuts), holds nothing but
// zero bytes, or ends in zeros its first frame runs into as above (cut the
// same way), when every other segment holds nothing: it reads the header
// of each session's first frame (and, when the segment's last byte is
// zero, its tail), once per session and
// process (a hash of the id of every session found holding a record is
// kept until the session is deleted), opens the sessions where that frame
// is not found whole (which removes what a create cut short left), and
// lists every session that holds a record, is damaged, or cannot be read.
//
// When the first use of a session is a Read from its start (sequence 1)
// and recovery reads the journal from its start (no matching checkpoint),
// each segment is read into one buffer and checked in memory with the same
// rules, and the checked bytes are kept (within the store's 16 MiB, see
// Checkpoint) for the pages that follow, as for a checkpoint's prefix. A
// segment of 512 KiB or more is read in 256 KiB chunks by a goroutine of
// its own while the reopen checks each chunk as it comes in, so the check
// runs beside the copy from the page cache, on bytes still in the CPU's
// cache; a read error ends it as a read error, never as damage. That check
// reads each byte once: frames are delimited three at a time
// and their checksums computed side by side (the CRC32 instruction's
// chains interleaved, on amd64), then each frame is judged in order, so
// the damage reported is always the first, exactly as a frame-by-frame
// scan reports it.
//
// # Checkpoint
//
// sessions/{id}/checkpoint holds an opaque payload the caller derived from
// records 1..through. A session that holds no record has none: a
// checkpoint of it is refused with ErrInvalid and writes nothing. The file
// is written over the previous one in place (it is cut to the new length
// when that is shorter), with no flush: a
// checkpoint only speeds opens, and it reaches the disk with the file
// system's own writeback or the next sync point's syncfs. Writing in place
// keeps the file's inode: a temporary file renamed over the old one costs
// a file creation, a rename and the old inode's release, and on ext4
// starts the new file's writeback at once (auto_da_alloc): many times the
// cost of the write itself (BENCHMARKS.md, "Checkpoints written in
// place"). Within the process, a read of the checkpoint waits for a write
// in progress, and so does a Delete of the session; a checkpoint computed
// before a Delete removed the session is not written after it (it fails
// with ErrConflict), so that it brings back neither the directory nor a
// checkpoint a new session of the same id could match. After a crash, a kill in the middle of a write or a write
// that failed (a full disk), open finds the previous checkpoint, the new
// one, none, or a file whose bytes are old and new mixed or did not all
// reach the disk, which its checksum refuses; the session is then read
// from its journal, and its next checkpoint replaces the file. Layout
// (little-endian):
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
// shorter than its stamp. A file whose length is not the one its header
// gives, or that is longer than any checkpoint of the session could be
// (one stamp per segment file and a payload of at most 2^32-1 bytes), is
// malformed: it is not read past its header, however large, and the
// payload is read into memory only by ReadCheckpoint (an open runs it
// through the checksum in pieces). A payload longer than 2^32-1 bytes is
// refused with ErrTooLarge.
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
// without the checkpoint before the session is refused). The covered
// prefix is checked lazily, but always before anything is appended after
// it: the first Append, the first Read that starts inside it, or Verify
// reads every frame of it with the recovery rules (checksum, payload,
// dense sequences, exactly through records) and builds its sparse index.
// When a Read starts it, the prefix is read into one buffer per segment
// (in chunks checked as they come in, as above) and the checked bytes are kept (within 16 MiB for the whole store) for the
// pages that follow: they are served from memory without a second read,
// checksum or payload check (a page's records are decoded straight from
// the frames checked then into one slice of exactly the page's length),
// their records' kinds and byte fields are slices of the kept bytes, and
// the bytes are given back once a page passes the end of the prefix (or
// the session leaves memory).
// Damage there refuses the session as a whole, as damage found at open
// does: that call and every later Next, Read, Append and Subscribe answer
// the *DamagedError naming the file and offset, nothing is rewritten, and
// the next open (which cannot trust the prefix either) refuses it again.
// A checkpoint that does not match is ignored and every frame is read.
//
// # Compatibility
//
// testdata/golden holds a segment, a commit log, a sync point marker and a
// checkpoint written by this version for a fixed input; the tests check
// that they still open and read back, and that the encoders still write
// those bytes (regenerate with go test -run Golden -update after a
// deliberate change, keeping the old files readable).
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
// segments and sessions with subscriptions may keep more sessions loaded.
// When every other idle session is held that way, the session a call has
// just used stays too, so that a reader paging through it does not open
// it from disk again for every page; it goes when another session is
// used. Stats.Recoveries counts the sessions opened from disk.
//
// Recovery and Read scan a segment with positional reads into one pooled
// buffer (64 KiB, doubling up to 1 MiB per read), checking each frame in
// place without per-frame allocations. Read verifies the checksum of
// every frame it passes again; a committed frame that no longer checks out
// fails the Read with an error wrapping a *DamagedError. A page read from
// disk copies its records' data into a few shared buffers and shares equal
// kind strings.
package journal
