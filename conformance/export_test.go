package conformance

import "time"

// SetServeCloseWait sets how long ServeHandler's cleanup waits for the
// handler's requests to end, and returns a func restoring the old value.
func SetServeCloseWait(d time.Duration) (restore func()) {
	old := serveCloseWait.Swap(int64(d))
	return func() { serveCloseWait.Store(old) }
}
