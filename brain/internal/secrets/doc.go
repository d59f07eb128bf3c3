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
// fsync). A file that fails authentication is an error, never treated as
// empty. The key file is the only thing that unseals; protecting the data
// directory (and its backups) protects the credentials. Open refuses a key
// file that is not a regular file or whose mode lets other users read or
// write it (ErrKey, naming the chmod that fixes it), as a copy restored
// with a default mode would. The key cannot be rotated in place: a
// replaced or lost key file leaves every sealed file unreadable, and the
// sessions that hold credentials answer credential_unavailable on their
// next model call or environment operation; back the key file up with
// the data directory.
package secrets
