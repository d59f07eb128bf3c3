package loophost

import "sync"

// maxOpenFiles bounds the files and directories of its grants one Tool
// invocation holds open at once. Each is a file descriptor of the
// server's process, which every session, connection and journal file
// shares; past the bound an open fails with EMFILE ("too many open
// files") and opens nothing, and closing a file makes room again.
const maxOpenFiles = 256

// openFiles counts the files an invocation holds open in its grants.
type openFiles struct {
	mu      sync.Mutex
	n       int
	refused bool // an open was refused since takeRefused
}

// take counts one more open file, or notes a refusal and answers false
// when maxOpenFiles are open.
func (o *openFiles) take() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n >= maxOpenFiles {
		o.refused = true
		return false
	}
	o.n++
	return true
}

// put counts one open file less.
func (o *openFiles) put() {
	o.mu.Lock()
	o.n--
	o.mu.Unlock()
}

// takeRefused reports whether an open was refused since the last call.
func (o *openFiles) takeRefused() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.refused
	o.refused = false
	return r
}
