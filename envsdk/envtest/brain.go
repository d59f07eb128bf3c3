package envtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Brain is a fake Brain serving the callback, reporter and controller
// context endpoints on loopback. It is safe for concurrent use.
type Brain struct {
	// URL is the base URL of the server, without a trailing slash.
	URL string

	srv *httptest.Server

	mu       sync.Mutex
	grants   map[string]*grant // by token
	calls    []Call
	changed  chan struct{} // closed and replaced on every recorded call
	sequence uint64        // last committed sequence
	kv       map[string]map[string]json.RawMessage
	handlers map[string]HandlerFunc
	faults   map[string][]*Fault
	closed   chan struct{}
	once     sync.Once
}

// New starts a fake Brain. The caller must Close it.
func New() *Brain {
	b := &Brain{
		grants:   map[string]*grant{},
		changed:  make(chan struct{}),
		sequence: 99,
		kv:       map[string]map[string]json.RawMessage{},
		handlers: map[string]HandlerFunc{},
		faults:   map[string][]*Fault{},
		closed:   make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions/{sid}/executions/{seq}/call", b.serveExecution)
	mux.HandleFunc("POST /v1/sessions/{sid}/environments/{env}/operations/{seq}/context", b.serveContext)
	mux.HandleFunc("POST /v1/sessions/{sid}/environments/{env}/{bseq}/events", b.serveReporter)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		b.record(Call{Kind: KindUnknown, Method: r.Method + " " + r.URL.Path, Token: bearer(r), Time: time.Now(), Status: http.StatusNotFound})
		writeError(w, http.StatusNotFound, "not_found", "no such route: "+r.Method+" "+r.URL.Path)
	})
	b.srv = httptest.NewServer(mux)
	b.URL = b.srv.URL
	register(b)
	return b
}

// NewBrain starts a fake Brain that is closed when the test ends.
func NewBrain(t testing.TB) *Brain {
	t.Helper()
	b := New()
	t.Cleanup(b.Close)
	return b
}

// Close stops the server; slow replies in progress end at once.
func (b *Brain) Close() {
	b.once.Do(func() {
		unregister(b)
		close(b.closed)
		b.srv.CloseClientConnections()
		b.srv.Close()
	})
}

// Client returns an HTTP client for the server.
func (b *Brain) Client() *http.Client { return b.srv.Client() }

// commit allocates the next committed sequence. Callers hold b.mu.
func (b *Brain) commitLocked() uint64 {
	b.sequence++
	return b.sequence
}

// LastSequence is the last sequence the fake Brain committed.
func (b *Brain) LastSequence() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sequence
}

// apiError is the error body of every non-2xx answer.
type apiError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

func errorBody(code, message string) []byte {
	data, _ := json.Marshal(apiError{Code: code, Message: message, Retryable: code == "internal" || code == "overloaded"})
	return data
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeRaw(w, status, errorBody(code, message))
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
