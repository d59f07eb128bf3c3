// Package idem keeps Brain's durable HTTP idempotency claims and answers in
// one append-only file, requests/requests.log under the data directory.
//
// A request carrying an Idempotency-Key is identified by its scope (the
// operation, e.g. "create_session" or "send_message.async") and its key, and
// described by a SHA-256 digest of the request. Before the operation runs,
// Store.Claim durably records a claim; before the answer is sent,
// Claim.Answer durably records it. A later request with the same scope and
// key:
//
//   - with the same digest and a recorded answer gets that answer replayed,
//     and nothing runs again;
//   - with a different digest is refused with ErrConflict;
//   - while the first is still running in this process waits for it and then
//     gets its answer;
//   - when the claim has no answer and was made by an earlier process (it
//     crashed mid-request) is refused with ErrAmbiguous, forever (such a
//     claim does not expire): the request is never run twice.
//
// Claim.Release durably forgets a claim whose operation did not run (a busy
// session refused it), so the key is not consumed.
//
// Store.ClaimHinted records a hint with the claim: enough for the caller to
// find the request's answer later in state it keeps durably elsewhere.
// Such a claim may be answered with Claim.AnswerDerivable, which writes the
// answer without waiting for the flush; see "Derivable answers" below.
//
// Store.ClaimRiding makes a claim that rides the caller's journal commits
// instead of flushing requests.log; see "Claims that ride the journal".
//
// Answered entries expire Options.Retention after their last record (zero
// keeps them forever); an expired entry is forgotten and its key runs anew.
// A claim without an answer never expires.
//
// # File format
//
// requests.log is a concatenation of frames and nothing else (no header, no
// padding). All integers are little-endian.
//
//	offset  size  field
//	0       4     payload length N (uint32, 11+S+K..MaxPayloadBytes)
//	4       4     CRC32C (Castagnoli) of the N payload bytes
//	8       N     payload
//
// The payload:
//
//	offset     size  field
//	0          1     version, always 1
//	1          1     type: 1 = claim, 2 = answer, 3 = release,
//	                 4 = hinted claim
//	2          8     at_ms (int64, Unix milliseconds when written)
//	10         1     scope length S (uint8, 1..255)
//	11         S     scope, UTF-8
//	11+S       2     key length K (uint16, 1..256)
//	13+S       K     key, raw bytes of the Idempotency-Key header
//	13+S+K     ...   by type:
//	                 claim:   32 bytes, the SHA-256 request digest
//	                 hinted claim: 32 bytes digest, 2 bytes hint length H
//	                          (uint16, 1..1024), then H bytes of hint
//	                 answer:  2 bytes HTTP status (uint16), 4 bytes body
//	                          length B (uint32), then B bytes of body
//	                 release: nothing
//
// The payload ends exactly after its last field. An answer or release
// applies to the latest claim of the same scope and key that precedes it;
// one with no such claim is ignored. A hinted claim is a claim in every
// other respect.
//
// testdata/golden/requests.log holds every record type as this version
// writes it; the tests check that it still opens to the same answers and
// that the store still writes those bytes.
//
// # Durability and recovery
//
// Every record is written with one write(2) and made durable with
// fdatasync before Claim, Answer or Release return; concurrent callers
// share one flush (group commit). On Open the file is read from the start:
// if it ends inside a frame (fewer than 8 header bytes or fewer payload
// bytes than announced) that incomplete final write is cut off (the file is
// truncated and fsynced). So is a tail of nothing but zero bytes after the
// last complete frame, however long: a crash can leave the file's new size
// durable without the data of a write that was never acknowledged (XFS,
// ext4 in some modes), and every acknowledged frame was flushed, so such
// zeros hold nothing acknowledged. The same crash can leave the first
// sectors of that write on disk and the rest reading as zero: a frame
// that does not check out, after which the file holds nothing but zero
// bytes, is that incomplete write when its length says it ends past the
// 512-byte sector (at a multiple of 512 in the file) holding its last
// byte that is not zero; it is cut off as above. (The bytes of a write up
// to a sector boundary reach the disk whole, so a frame that ends within
// sectors holding data was written whole.) A length field of zero starts
// no frame (a payload is never empty), so such zeros followed by a byte
// that is not zero (a frame after them, or a zeroed region inside the
// file) are neither: they are damage. A complete frame whose checksum
// does not match or whose payload does not decode, and that is no such
// write, is damage too: Open refuses with
// ErrDamaged naming the offset, and nothing is rewritten, because
// forgetting a claim could run a request twice. So is a frame whose length
// says it ends past the file (or past the sector holding its last byte
// that is not zero, with only zeros after it) while its payload, taken at
// the length its own fields (scope, key and the type's fields) give, ends
// within the file, passes the frame's checksum and decodes: a complete
// frame whose length field was damaged, which an incomplete write cannot
// look like.
//
// # Write failures
//
// A failed write or fdatasync (a full or failing disk) fails its call
// with ErrWrite and every call after it, but does not stick: the next
// call (or Healthy) first rewrites the whole file from the entries in
// memory, as a compaction does, and goes on once that succeeds. What the
// failure left in the old file (a partial frame, pages a failed flush may
// have dropped) is thereby replaced. The entries in memory hold only what
// is safe to make durable: a claim whose write or flush failed is
// forgotten (its request did not run, so its key runs anew), so is a
// claim whose release cannot be written (its request did not run
// either; until the rewrite, a restart finds it ambiguous), and an
// answer whose write failed is not recorded, so its key stays ambiguous,
// in this process and after a restart. Healthy answers the failure while
// the rewrite does not succeed.
//
// # Derivable answers
//
// A durable answer normally costs a flush after the operation, on top of
// the claim's flush before it. AnswerDerivable skips waiting for the
// second one when the answer already follows from durable state: the
// claim's hint plus the caller's own durable store. The answer record is
// still written at once (replays in this process use it) and becomes
// durable with the store's next flush, compaction or Close.
//
// If the process ends first, Open finds a hinted claim without an answer
// and asks Options.Derive, which answers from the hint and the caller's
// store, or refuses (the claim then stays ambiguous, as any unanswered
// claim). Either way Open rewrites the file (compaction) with the outcome
// and without the hint before it returns, so a later Open cannot derive a
// different answer from state that changed meanwhile; a store opened
// without Derive treats every hinted claim as ambiguous, durably.
//
// Brain uses this for async message submission (package httpapi) on a
// store that cannot ride the journal (see "Claims that ride the journal"
// for the file store, where the claim and the answer ride the commit of
// turn_started instead), where the answer is the sequence of the
// turn_started record the journal commits. Rule 1, a claim is durable before its request executes: the
// hinted claim is flushed by ClaimHinted like any claim, before the
// journal commit starts. Rule 2, an answer is durable before it is sent:
// the 202 is sent after the journal commit returned, so the hinted claim
// and the turn_started record are both durable, and Derive finds the
// answer from them. The hint is the session id and the session's next
// journal sequence N read just before the claim; Derive answers the first
// turn_started record of the session at or after N, and nothing when there
// is none (the turn was never admitted: ambiguous, as before). That record
// is the submission's own because httpapi gates each session: a hinted
// submission starts only when no other send or delete of the session is in
// flight, and sends and deletes arriving meanwhile wait until it has
// committed, or has durably released or answered its claim. Only sends
// commit turn_started, so no other turn_started can land at or after N
// while the claim is unsettled; earlier ones are below N (their sends had
// returned, so the journal's committed next sequence counted them); and a
// delete, which would take the record away, cannot run before the answer
// record is written, and is itself claimed (flushed) after it. The
// serial durable waits of an accepted async submission are thus two
// (claim, journal commit) instead of three.
//
// # Claims that ride the journal
//
// Store.ClaimRiding claims a key without writing anything: the claim is
// made durable by the caller's journal instead, in the same commit as the
// first records of the request (for a synchronous message, with
// turn_started, activation_started and model_call_started), and the answer
// with the commit that ends the request (with turn_ended). An async
// message submission is answered as soon as its turn_started record is
// durable, with that record's sequence: its claim and its answer both
// ride that one commit (claim record first), so its claim is never
// durable without its answer. Both are
// private session journal records, never served as events:
// "_request_claimed" and "_request_answered" (commits.ClaimKind,
// commits.AnswerKind), whose data is one JSON object:
//
//	v       1
//	scope   the scope (string)
//	key     the Idempotency-Key bytes (base64)
//	digest  the SHA-256 request digest (base64; claim only)
//	at_ms   Unix milliseconds: the claim's claim time, the answer's time
//	status  the HTTP status (answer only)
//	body    the answer body (base64; answer only, absent when empty)
//
// The journal hands every durable record of these kinds to
// Store.Journaled before it acknowledges them; Journaled folds the record
// into the entries and holds the claim or answer frame it stands for (a
// claim frame of type 1 keeping the claim's at_ms, an answer frame of type
// 2) for requests.log: held frames are appended together, without a
// flush, ahead of the next frame written for another reason, once 64 KiB
// are held, at SyncJournaled and at Close, so that a commit's claims and
// answers cost no write of their own. The journal calls
// Store.SyncJournaled before it retires commit log files, so a record is
// always durable in the journal's commit log or in requests.log; when the
// journal replays its commit log at open (a crash), it hands the replayed
// records to RecoverJournaled, which appends to requests.log, durably,
// those whose frames the file lacks, before the log files are retired.
// A claim frame equal to the entry already held (same digest and at_ms)
// is the same claim and changes nothing, so a record recovered twice is
// harmless. An answer record folds only into the claim it follows: one
// whose at_ms is below the claim's is another, earlier claim's answer and
// is ignored. An answer is therefore never stamped below its claim's
// at_ms (when the wall clock stepped back meanwhile, it takes the claim's),
// so that its own claim always takes it.
//
// Rule 1 holds because the claim record is in the very commit that makes
// anything of the request durable, and every effect's *_started record is
// committed with it or after it; a crash after that commit leaves the
// claim without an answer: ambiguous, as any unanswered claim (for an
// async submission, whose answer is in the same commit, the key replays
// that answer, and the turn, never resumed, closes as interrupted). Rule 2
// holds because the answer record commits with the request's end, before
// the caller is answered. When the commit carrying the claim fails (a
// full disk), nothing of the request is durable and nothing ran, so
// Claim.Release forgets the claim in memory and the key stays usable. A
// riding claim is never written by a compaction until the journal made it
// durable. A riding claim answered or released after its claim record is
// durable but without an answer record (an outcome its commits did not
// carry) writes its answer or release frame and waits for its flush, as
// any claim.
//
// # Compaction
//
// When Open finds expired or released entries, and while running whenever
// the file has grown past twice the bytes of its live entries (and at least
// 1 MiB; the running store weighs this again each time the file has grown
// by a quarter of its live bytes, so the walk over the entries costs a
// constant per byte written), the file is rewritten with only the live entries (a claim frame,
// then its answer frame if any, keeping their at_ms) through a temporary
// file, fsync, rename and directory fsync, so a crash leaves the old or the
// new file (and perhaps the temporary file, which the next Open removes).
// The running store compacts inline, in the answer or release whose
// record made the file grow: that request waits for the rewrite, and its
// commits.Counter counts it as one more commit (so does a claim's, for
// the rewrite that recovers from a write failure before it). Frames that
// ride the journal grow the file without such a record: SyncJournaled
// weighs a compaction too, and the rewrite then stands for its flush.
// The journal calls it at its sync points, after the commits of the
// round were acknowledged, so the rewrite is no commit of a request but
// part of the sync point, as its own flushes are; the file outgrows the
// threshold by at most what the journal commits between two sync points.
// When Open's compaction fails (a full disk), Open goes on with
// the file as it is, which holds the same live entries, unless it settled
// hinted claims (see "Derivable answers"): their outcome must be durable
// before Open returns, so Open fails. A compaction whose rename is done
// but whose new file cannot be opened (no file descriptor left) leaves
// the store failed with ErrWrite, at Open as while running: nothing is
// written to the replaced file, and the next call rewrites and reopens
// the file first, as after any write failure.
package idem
