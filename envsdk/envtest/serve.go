package envtest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// maxCallBody bounds a callback or reporter body.
const maxCallBody = envapi.MaxCallBytes

// optionalInput reports whether method may be called without an input,
// as Brain allows: returned and finish (no outcome), telemetry.
func optionalInput(method string) bool {
	return method == envapi.MethodReturned || method == envapi.MethodFinish || method == envapi.MethodTelemetry
}

// answer is what a method produced.
type answer struct {
	status    int
	body      []byte
	committed uint64
}

func (b *Brain) serveExecution(w http.ResponseWriter, r *http.Request) {
	seq, _ := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	b.serveCall(w, r, KindExecution, r.PathValue("sid"), "", seq)
}

func (b *Brain) serveContext(w http.ResponseWriter, r *http.Request) {
	seq, _ := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	b.serveCall(w, r, KindContext, r.PathValue("sid"), r.PathValue("env"), seq)
}

func (b *Brain) serveReporter(w http.ResponseWriter, r *http.Request) {
	seq, _ := strconv.ParseUint(r.PathValue("bseq"), 10, 64)
	b.serveCall(w, r, KindReporter, r.PathValue("sid"), r.PathValue("env"), seq)
}

// serveCall runs the common path of every endpoint: authenticate, decode,
// check the grant, apply faults, process, record, answer.
func (b *Brain) serveCall(w http.ResponseWriter, r *http.Request, kind Kind, session, env string, seq uint64) {
	now := time.Now()
	token := bearer(r)
	call := Call{Kind: kind, Session: session, Environment: env, Sequence: seq, Token: token, Time: now}
	body, readErr := io.ReadAll(io.LimitReader(r.Body, maxCallBody+1))

	// The method names the call for faults and records. A body refused
	// is answered as Brain answers it: 413 past the bound, 400 when it is
	// not JSON, 422 when the envelope is not an ExecutionCall; returned,
	// finish and telemetry may omit their input.
	var ec envapi.ExecutionCall
	var decodeErr error
	decodeStatus := http.StatusUnprocessableEntity
	switch {
	case readErr != nil:
		decodeErr, decodeStatus = readErr, http.StatusBadRequest
	case len(body) > maxCallBody:
		decodeErr, decodeStatus = errors.New("body too large"), http.StatusRequestEntityTooLarge
	case !json.Valid(body):
		decodeErr, decodeStatus = errors.New("request body is not valid JSON"), http.StatusBadRequest
	case kind == KindReporter:
		call.Method, call.Input = MethodReporter, body
	default:
		decodeErr = envapi.Strict(body, &ec)
		call.Method, call.Input = ec.Method, ec.Input
		if decodeErr == nil && ec.Input == nil && !optionalInput(ec.Method) {
			decodeErr = errors.New("input: is required")
		}
	}

	b.mu.Lock()
	fault := b.takeFaultLocked(call.Method, token)
	call.Fault = fault
	if fault != nil && fault.Kind == RevokedToken {
		if g, ok := b.grants[token]; ok {
			g.revoked = true
		}
	}
	g, why := b.authorizeLocked(token, kind, session, env, seq, now)
	b.mu.Unlock()

	var a answer
	switch {
	case g == nil:
		a = answer{status: http.StatusUnauthorized, body: errorBody("unauthorized", why)}
	case decodeErr != nil:
		a = answer{status: decodeStatus, body: errorBody("invalid_request", decodeErr.Error())}
	case kind == KindReporter && g.closed:
		a = answer{status: http.StatusNotFound, body: errorBody("not_found", "the binding is closed or was replaced")}
	case kind != KindReporter && !contains(g.methods, call.Method):
		a = answer{status: http.StatusForbidden, body: errorBody("not_granted", "the grant does not list "+strconv.Quote(call.Method))}
	case fault != nil && fault.Kind == ServerError:
		a = answer{status: fault.Status, body: errorBody("internal", "injected server error")}
	case kind == KindReporter:
		a = b.report(body)
	default:
		a = b.process(call)
		if call.Method == envapi.MethodFinish && a.status == http.StatusOK {
			b.mu.Lock()
			g.revoked = true // finish closes the grant
			b.mu.Unlock()
		}
	}
	call.Committed = a.committed

	if fault != nil && fault.Kind == LoseAck && a.status == http.StatusOK {
		b.record(call) // Status 0: processed, never answered
		b.hold(r, fault.Delay)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // closes the connection without an answer
	}
	call.Status, call.Answer = a.status, a.body
	b.record(call)
	if fault != nil && fault.Kind == SlowReply {
		b.hold(r, fault.Delay)
	}
	writeRaw(w, a.status, a.body)
}

// hold waits d (none when d is not positive), or until the caller gives
// up or the Brain closes.
func (b *Brain) hold(r *http.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.Context().Done():
	case <-b.closed:
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (b *Brain) report(body []byte) answer {
	ev, err := envapi.DecodeReporterEvent(body)
	if err != nil {
		return answer{status: http.StatusUnprocessableEntity, body: errorBody("invalid_request", err.Error())}
	}
	if ev.Type == "event" && reserved(ev.EventType) {
		return answer{status: http.StatusUnprocessableEntity, body: errorBody("reserved_name", "event_type "+strconv.Quote(ev.EventType)+" is reserved")}
	}
	b.mu.Lock()
	seq := b.commitLocked()
	b.mu.Unlock()
	data, _ := json.Marshal(map[string]uint64{"sequence": seq})
	return answer{status: http.StatusOK, body: data, committed: seq}
}
