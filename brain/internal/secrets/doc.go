// Package secrets is Brain's sealed credential store: the model API keys and
// environment credentials sessions are created with. It implements the
// session engine's Secrets interface; nothing it keeps reaches the journal.
//
// # Files
//
// Under the data directory's server-metadata/ directory (mode 0700):
//
//	secrets.key              32 random bytes, the AES-256 key (mode 0600),
//	                         created on first open
//	sessions/{session}.sealed one file per session with secrets (mode 0600)
//
// A sealed file is
//
//	offset  size  field
//	0       4     magic "BRS1"
//	4       12    AES-GCM nonce, random per write
//	16      ...   AES-256-GCM ciphertext and tag of the JSON object
//	              {name: base64 value}, with the session id as
//	              additional data
//
// testdata/golden holds a key and a sealed file written by this version;
// the tests check that they still unseal (the nonce is random, so only the
// layout and plaintext of a new seal are compared).
//
// Files are replaced atomically (temporary file, fsync, rename, directory
// fsync). Open creates the directories it finds missing (sessions/ too,
// when it alone is gone) and fsyncs the parent of each before anything
// is sealed in it. A file that fails authentication is an error, never treated as
// empty. The key file is the only thing that unseals; protecting the data
// directory (and its backups) protects the credentials. Open refuses a key
// file that is not a regular file, whose mode lets other users read or
// write it, or that another user owns (ErrKey, naming the chmod or chown
// that fixes it), as a copy restored with a default mode or as another
// user would be. It refuses as well, with ErrUnsafe, server-metadata/ or
// sessions/ when another user owns it or group or others may write it
// (they could swap the key for one they know before later credentials
// are sealed under it), and a sealed file that another user owns, that
// group or others may write (an older seal of the same session could be
// brought back) or that is not a regular file; each error names the file
// and what is wrong, and nothing is created or changed in it. As
// PostgreSQL does with its data directory, the owner must be the
// effective user the server runs as, even when that is root. A key link to nothing (its target on a
// volume not mounted) is refused rather than replaced by a new key, and
// the first key is created exclusively: a key already in place is never
// replaced. The key cannot be rotated in place: a
// replaced or lost key file leaves every sealed file unreadable; the
// sessions that hold credentials then fail their next environment
// operation with credential_unavailable (nothing is sent) and their next
// model call with model_provider_failed, saying that the model key could
// not be read. Back the key file up with the data directory.
//
// # Orphaned files
//
// A session's secrets are sealed before its first journal record is
// written, and removed before its journal when it is deleted. A process
// killed between the seal and that record leaves a sealed file for a
// session that does not exist, and one killed during a seal leaves the
// seal's temporary file (sessions/.tmp-*). Store.Sweep removes both; the
// file backend calls it each time it opens, before anything is served,
// with the sessions its journal holds (damaged ones included). The
// sessions sealed through the Store before the sweep are kept whatever
// the journal holds, and files of any other name are left alone.
package secrets
