//go:build !unix

package fsutil

// Elsewhere there are no named pipes to wait for.
const oNonBlock = 0
