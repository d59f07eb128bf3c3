package fsutil

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// maxTempExtra is what WriteFileAtomic adds to a file's name for its
// temporary file: tempPrefix, "-" and the random digits of os.CreateTemp
// (at most 10).
const maxTempExtra = len(tempPrefix) + 1 + 10

// maxName is the longest file name the file systems in use accept.
const maxName = 255

// HashedKeyPrefix starts the name KeyFileName gives a long key. Base64url
// has no '.', so the two kinds of names never meet.
const HashedKeyPrefix = "sha256."

// KeyFileName is the name of the file that holds the state of key, ending
// in suffix: the key in base64url, or, when that name (or the temporary
// file WriteFileAtomic writes beside it) would be longer than a file name
// may be, HashedKeyPrefix and the key's SHA-256 in hex. A reader that
// finds a file checks it against this name, so the file of one key is
// never taken for another's.
func KeyFileName(key, suffix string) string {
	name := base64.RawURLEncoding.EncodeToString([]byte(key))
	if len(name)+len(suffix)+maxTempExtra > maxName {
		sum := sha256.Sum256([]byte(key))
		name = HashedKeyPrefix + hex.EncodeToString(sum[:])
	}
	return name + suffix
}
