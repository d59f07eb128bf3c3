package envsdk

import (
	"net/http"
	"sync"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Bounds of the time a request spends on the wire, sized by the largest
// body or answer it may carry: transferBase, plus a second for every
// transferRate bytes (a 16 MiB command: 94 seconds; a 32 MiB answer: 158
// seconds), at most maxTransfer.
const (
	transferBase = 30 * time.Second
	transferRate = 256 << 10
	maxTransfer  = time.Hour
)

// transferTimeout is how long reading a body, or writing an answer, of up
// to limit bytes may take.
var transferTimeout = func(limit int64) time.Duration {
	secs := limit / transferRate
	if secs >= int64((maxTransfer-transferBase)/time.Second) {
		return maxTransfer
	}
	return transferBase + time.Duration(secs)*time.Second
}

// sizer is a handler that knows the largest command body it reads and the
// largest answer it writes.
type sizer interface {
	limits() (body, answer int64)
}

func (h *handler) limits() (body, answer int64) { return h.maxBody, int64(h.maxAnswer) }

// boundTransfers bounds the time h's requests spend reading their body
// and writing their answer, so that a client that sends its body slowly,
// or does not read the answer, does not hold a connection and its
// goroutine for ever. The time h takes in between is not bounded: an
// execute runs as long as its deadline lets it, and its answer, written
// then, gets its own bound.
func boundTransfers(h http.Handler) http.Handler {
	body, answer := int64(DefaultMaxBodyBytes), int64(envapi.MaxResponseBytes)
	if s, ok := h.(sizer); ok {
		body, answer = s.limits()
	}
	return &bounded{h: h, body: transferTimeout(body), answer: transferTimeout(answer)}
}

type bounded struct {
	h            http.Handler
	body, answer time.Duration
}

func (b *bounded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	// The bound of an earlier answer on the connection does not carry
	// over to this one, which may come much later.
	_ = rc.SetWriteDeadline(time.Time{})
	if r.Body != nil && r.Body != http.NoBody {
		// The bound ends where the body does: once the body was read,
		// net/http lifts the deadline to watch the connection for the
		// client going away.
		_ = rc.SetReadDeadline(time.Now().Add(b.body))
	}
	aw := &boundedWriter{ResponseWriter: w, rc: rc, bound: b.answer}
	b.h.ServeHTTP(aw, r)
	// What h left unwritten the server writes once h returned.
	aw.begin()
}

// boundedWriter starts the answer's bound when the answer begins.
type boundedWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	bound time.Duration
	once  sync.Once
}

func (w *boundedWriter) begin() {
	w.once.Do(func() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.bound)) })
}

func (w *boundedWriter) WriteHeader(status int) {
	if status >= http.StatusOK {
		// An informational answer (1xx) is not the answer yet.
		w.begin()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	w.begin()
	return w.ResponseWriter.Write(p)
}

// Flush lets a handler flush through the bound (http.Flusher).
func (w *boundedWriter) Flush() {
	w.begin()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *boundedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
