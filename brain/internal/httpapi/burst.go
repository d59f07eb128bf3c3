package httpapi

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// Memory after a burst of stream openings.
//
// Opening a stream costs far more memory than keeping one open: net/http's
// buffers of the connection (a 4 KiB reader and writer, the response's
// 2 KiB buffer, the 4 KiB writer Hijack makes), the request, and the stack
// of the connection's goroutine come to some 15–20 KiB per connection,
// all garbage once the connection is taken over, while an idle stream
// keeps about 1 KiB. When many subscribers arrive at once (a reconnect
// storm after a restart or a network blip, an audience joining a
// session), the heap grows with the burst, and the runtime keeps the
// freed pages until later collections and its scavenger give them back:
// on a server that then sits idle with its streams, until the forced
// collection every two minutes. Such a server would hold several times
// the memory its streams need. Once a burst of at least burstStreams
// stream openings is over (no stream handshake in flight for burstQuiet),
// the server collects twice (the first collection moves the buffers
// net/http pooled during the burst to the pools' victim caches, the second
// frees them) and returns the freed memory to the operating system; at
// most once per burstEvery, so that a steady churn of subscribers costs at
// most two collections of the live heap a second.

// burstStreams is the least number of stream openings that make a burst.
const burstStreams = 256

// burstQuiet is how long no stream handshake runs before a burst counts
// as over.
const burstQuiet = 100 * time.Millisecond

// burstEvery is the least time between two releases.
const burstEvery = time.Second

// burst follows stream handshakes and releases the memory of a burst of
// them once it is over.
type burst struct {
	min     int    // openings that make a burst
	release func() // returns freed memory to the operating system

	mu       sync.Mutex
	inFlight int         // stream handshakes running
	opened   int         // stream handshakes begun since the last release
	last     time.Time   // the last release
	timer    *time.Timer // fires a release once the burst is quiet
}

func newBurst() *burst {
	return &burst{min: burstStreams, release: releaseMemory}
}

// releaseMemory frees the garbage of a burst, including what sync.Pools
// hold, and returns the freed memory to the operating system.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// begin records a stream handshake starting.
func (b *burst) begin() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight++
	b.opened++
	if b.timer != nil {
		b.timer.Stop()
	}
}

// end records a stream handshake over; the last of a burst arms the
// release.
func (b *burst) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight--
	if b.inFlight > 0 || b.opened < b.min {
		return
	}
	wait := max(burstQuiet, time.Until(b.last.Add(burstEvery)))
	if b.timer == nil {
		b.timer = time.AfterFunc(wait, b.fire)
	} else {
		b.timer.Reset(wait)
	}
}

// fire releases the memory of a burst that is over; it does nothing
// while a stream handshake runs or before a burst's worth of them.
func (b *burst) fire() {
	b.mu.Lock()
	if b.inFlight > 0 || b.opened < b.min {
		b.mu.Unlock()
		return
	}
	b.opened = 0
	b.last = time.Now()
	b.mu.Unlock()
	b.release()
}
