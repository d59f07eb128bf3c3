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
//     crashed mid-request) is refused with ErrAmbiguous, forever (until
//     retention expires): the request is never run twice.
//
// Claim.Release durably forgets a claim whose operation did not run (a busy
// session refused it), so the key is not consumed.
//
// Entries expire Options.Retention after their last record (zero keeps them
// forever); an expired entry is forgotten and its key runs anew.
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
//	1          1     type: 1 = claim, 2 = answer, 3 = release
//	2          8     at_ms (int64, Unix milliseconds when written)
//	10         1     scope length S (uint8, 1..255)
//	11         S     scope, UTF-8
//	11+S       2     key length K (uint16, 1..256)
//	13+S       K     key, raw bytes of the Idempotency-Key header
//	13+S+K     ...   by type:
//	                 claim:   32 bytes, the SHA-256 request digest
//	                 answer:  2 bytes HTTP status (uint16), 4 bytes body
//	                          length B (uint32), then B bytes of body
//	                 release: nothing
//
// The payload ends exactly after its last field. An answer or release
// applies to the latest claim of the same scope and key that precedes it;
// one with no such claim is ignored.
//
// # Durability and recovery
//
// Every record is written with one write(2) and made durable with
// fdatasync before Claim, Answer or Release return; concurrent callers
// share one flush (group commit). On Open the file is read from the start:
// if it ends inside a frame (fewer than 8 header bytes or fewer payload
// bytes than announced) that incomplete final write is cut off (the file is
// truncated and fsynced). A complete frame whose checksum does not match or
// whose payload does not decode is damage: Open refuses with ErrDamaged
// naming the offset, and nothing is rewritten, because forgetting a claim
// could run a request twice.
//
// # Compaction
//
// When Open finds expired or released entries, and while running whenever
// the file has grown past twice the bytes of its live entries (and at least
// 1 MiB), the file is rewritten with only the live entries (a claim frame,
// then its answer frame if any, keeping their at_ms) through a temporary
// file, fsync, rename and directory fsync, so a crash leaves the old or the
// new file.
package idem
