//go:build !unix

package journal

// Elsewhere there are no named pipes to wait for; a link is followed.
const (
	oNoFollow = 0
	oNonBlock = 0
)
