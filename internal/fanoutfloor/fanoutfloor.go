// Package fanoutfloor is the floor of the event stream fan-out benchmarks
// (BENCHMARKS.md row 13): a bare server that does nothing for a subscriber
// but take its connection over, write a chunked response head, and then
// write each published batch of frames to it as one chunk; and the frames
// of a text turn of the scripted model, sized like Brain's. The in-process
// benchmark (package brain) and the one against the brain serve binary
// (brain/e2e) measure Brain against it.
package fanoutfloor

import (
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
)

// TurnEventSizes are the JSON sizes of the events of a text turn of the
// scripted model (turn_started … turn_ended), in its two commits.
var TurnEventSizes = [][]int{{112}, {118, 235, 262, 122, 119}}

// TurnFrames answers the frames of one turn's commits, numbered after
// *seq.
func TurnFrames(seq *uint64) [][]byte {
	var out [][]byte
	for _, sizes := range TurnEventSizes {
		var b []byte
		for _, n := range sizes {
			*seq++
			b = fmt.Appendf(b, "id: %d\nevent: e\ndata: {\"x\":\"%s\"}\n\n", *seq, strings.Repeat("x", n-8))
		}
		out = append(out, b)
	}
	return out
}

// Floor is the bare fan-out server. Its zero value is ready; it serves
// every request as a new subscriber.
type Floor struct {
	mu    sync.Mutex
	conns []net.Conn
}

// ServeHTTP takes the connection over and writes the head of a chunked
// event stream.
func (fl *Floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"))
	fl.mu.Lock()
	fl.conns = append(fl.conns, c)
	fl.mu.Unlock()
}

// Close closes every subscriber's connection.
func (fl *Floor) Close() {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for _, c := range fl.conns {
		c.Close()
	}
}

// Count answers the number of subscribers.
func (fl *Floor) Count() int {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return len(fl.conns)
}

// Publish writes frames to every subscriber as one chunk, one write each
// from GOMAXPROCS goroutines.
func (fl *Floor) Publish(frames []byte) {
	chunk := fmt.Appendf(nil, "%x\r\n%s\r\n", len(frames), frames)
	fl.mu.Lock()
	conns := fl.conns
	fl.mu.Unlock()
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(conns); i += workers {
				_, _ = conns[i].Write(chunk)
			}
		})
	}
	wg.Wait()
}
