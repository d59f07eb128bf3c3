package envbind

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/httpapi"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// apiError answers an ApiError with status.
func apiError(w http.ResponseWriter, status int, code, message string) {
	httpapi.WriteJSON(w, status, api.ApiError{Code: code, Message: message, Retryable: api.DefaultRetryable(code)})
}

func unauthorized(w http.ResponseWriter) {
	apiError(w, http.StatusUnauthorized, api.CodeUnauthorized, "a valid bearer token is required")
}

// requestError carries the status of a request that failed before
// reaching the engine.
type requestError struct {
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func (e *requestError) write(w http.ResponseWriter) {
	apiError(w, e.status, api.CodeInvalidRequest, e.msg)
}

// readJSON checks the Content-Type and reads a bounded body.
func (b *Binder) readJSON(w http.ResponseWriter, r *http.Request) ([]byte, *requestError) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, &requestError{http.StatusUnsupportedMediaType, "Content-Type must be application/json"}
	}
	max := b.cfg.MaxRequestBytes
	if r.ContentLength > max {
		return nil, &requestError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", max)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, &requestError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", max)}
	}
	if err != nil {
		return nil, &requestError{http.StatusBadRequest, "reading the request body failed"}
	}
	if !json.Valid(body) {
		return nil, &requestError{http.StatusBadRequest, "request body is not valid JSON"}
	}
	return body, nil
}

// fieldError answers a strict decoding error: 422 naming the field.
func fieldError(err error) *requestError {
	return &requestError{http.StatusUnprocessableEntity, err.Error()}
}

// pathSession answers the {id} path value.
func pathSession(r *http.Request) (string, *requestError) {
	id := r.PathValue("id")
	if !session.ValidSessionID(id) {
		return "", &requestError{http.StatusBadRequest, "malformed session id"}
	}
	return id, nil
}

func pathSequence(r *http.Request, name string) (uint64, *requestError) {
	n, err := strconv.ParseUint(r.PathValue(name), 10, 64)
	if err != nil || n == 0 {
		return 0, &requestError{http.StatusBadRequest, "malformed sequence"}
	}
	return n, nil
}

func (b *Binder) engineOr503(w http.ResponseWriter) *session.Engine {
	e := b.eng()
	if e == nil {
		apiError(w, http.StatusServiceUnavailable, api.CodeOverloaded, "environment bindings are not attached to an engine")
	}
	return e
}

// serveCall is POST /v1/sessions/{id}/executions/{sequence}/call: a
// service call of an open execution, authenticated by its invocation
// token, or of the controller context of the environment operation
// {sequence}, authenticated by the context's token.
func (b *Binder) serveCall(w http.ResponseWriter, r *http.Request) {
	id, rerr := pathSession(r)
	if rerr != nil {
		unauthorized(w)
		return
	}
	seq, rerr := pathSequence(r, "sequence")
	if rerr != nil {
		unauthorized(w)
		return
	}
	k := grantKey{id, seq, false}
	tok, ok := bearer(r)
	if !ok {
		unauthorized(w)
		return
	}
	if !b.grants.check(k, tok) {
		k.ctrl = true
		if !b.grants.check(k, tok) {
			unauthorized(w)
			return
		}
	}
	e := b.engineOr503(w)
	if e == nil {
		return
	}
	svc, err := lookup(e, k)
	if err != nil {
		b.grants.revoke(k)
		unauthorized(w)
		return
	}
	body, rerr := b.readJSON(w, r)
	if rerr != nil {
		rerr.write(w)
		return
	}
	var call envapi.ExecutionCall
	if err := envapi.Strict(body, &call); err != nil {
		fieldError(err).write(w)
		return
	}
	out, err := svc.Call(r.Context(), call.Method, call.Input)
	switch {
	case err == nil:
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
	case errors.Is(err, session.ErrExecutionClosed):
		b.grants.revoke(k)
		unauthorized(w)
	case errors.Is(err, session.ErrUnknownMethod), errors.Is(err, session.ErrNotGranted):
		apiError(w, http.StatusForbidden, api.CodeNotGranted, "method "+strconv.Quote(call.Method)+" is not granted to this execution")
	default:
		httpapi.WriteError(w, err)
	}
}

// serveReport is POST /v1/sessions/{id}/environments/{env}/{sequence}/events:
// an environment report authenticated by the binding's reporter token.
func (b *Binder) serveReport(w http.ResponseWriter, r *http.Request, id, env string, bseq uint64) {
	key, err := b.serverKey()
	if err != nil {
		b.log.Error("envbind: reporter key unavailable", "err", err)
		apiError(w, http.StatusServiceUnavailable, api.CodeOverloaded, "reporter key unavailable")
		return
	}
	tok, ok := bearer(r)
	if !ok || !equalTokens(tok, reporterToken(key, id, env, bseq)) {
		unauthorized(w)
		return
	}
	e := b.engineOr503(w)
	if e == nil {
		return
	}
	body, rerr := b.readJSON(w, r)
	if rerr != nil {
		rerr.write(w)
		return
	}
	ev, err := envapi.DecodeReporterEvent(body)
	if err != nil {
		fieldError(err).write(w)
		return
	}
	rep := session.Report{Type: ev.Type, EventType: ev.EventType, Data: ev.Data}
	if ev.Output != nil {
		rep.Output, _ = json.Marshal(ev.Output)
	}
	seq, err := e.Report(r.Context(), id, api.EnvironmentRef{Name: env, Sequence: bseq}, rep)
	switch {
	case err == nil:
		httpapi.WriteJSON(w, http.StatusOK, struct {
			Sequence uint64 `json:"sequence"`
		}{seq})
	case errors.Is(err, session.ErrExecutionClosed), errors.Is(err, session.ErrNotFound):
		apiError(w, http.StatusNotFound, api.CodeNotFound, "the binding is closed or was replaced")
	default:
		httpapi.WriteError(w, err)
	}
}
