package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Idempotency scopes of the environment control routes.
const (
	ScopeControl = "environment_control"
	ScopeCall    = "environment_call"
)

// Route patterns of the environment routes.
const (
	PatternCall    = "POST /v1/sessions/{id}/executions/{sequence}/call"
	PatternControl = "POST /v1/sessions/{id}/environments"
	PatternBinding = "POST /v1/sessions/{id}/environments/{env}/{seg}/{last}"
	// PatternEnvCall names the environment call route, served under
	// PatternBinding, in metrics and traces.
	PatternEnvCall = "POST /v1/sessions/{id}/environments/{env}/calls/{name}"
)

// environmentRoutes mounts the environment routes. The reporter route
// (.../environments/{env}/{sequence}/events) and the environment call
// route (.../environments/{env}/calls/{name}) share one mux pattern; the
// call branch is handed to the call route's handler, which needs the
// server token like every other control route, and is counted, logged
// and traced as PatternEnvCall.
func (s *Server) environmentRoutes() {
	s.handleOpen(PatternCall, http.HandlerFunc(s.serveCall))
	s.handle(PatternControl, http.HandlerFunc(s.serveControl))
	envCall := s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.forward(w, r) {
			s.serveEnvCall(w, r)
		}
	}))
	s.handleOpen(PatternBinding, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seg, last := r.PathValue("seg"), r.PathValue("last")
		if seg == "calls" {
			r.Pattern = PatternEnvCall
			envCall.ServeHTTP(w, r)
			return
		}
		id, err := envSession(r)
		if err != nil {
			refuseUnread(w, r, err)
			return
		}
		env := r.PathValue("env")
		bseq, ok := reportPath(seg, last)
		if !ok || !envapi.ValidIdentifier(env) {
			refuseUnread(w, r, newError(http.StatusNotFound, api.CodeNotFound, "no such route"))
			return
		}
		s.serveReport(w, r, id, env, bseq)
	}))
}

// bindingServed reports whether POST serves a path of PatternBinding's
// shape whose last three segments are env, seg and last: an environment
// call or a report.
func bindingServed(env, seg, last string) bool {
	if seg == "calls" {
		return true
	}
	_, ok := reportPath(seg, last)
	return ok && envapi.ValidIdentifier(env)
}

// reportPath answers the binding sequence of a reporter path's last two
// segments ({sequence}/events).
func reportPath(seg, last string) (uint64, bool) {
	n, err := strconv.ParseUint(seg, 10, 64)
	return n, err == nil && n != 0 && last == "events"
}

// envSession answers the {id} path value of an environment route.
func envSession(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !session.ValidSessionID(id) {
		return "", badRequest("malformed session id")
	}
	return id, nil
}

func pathSequence(r *http.Request, name string) (uint64, error) {
	n, err := strconv.ParseUint(r.PathValue(name), 10, 64)
	if err != nil || n == 0 {
		return 0, badRequest("malformed sequence")
	}
	return n, nil
}

// readEnvJSON checks the Content-Type and reads a bounded body that must
// be valid JSON with no member given twice (400, as for every route); the
// route decodes it strictly (422 naming the field).
func (s *Server) readEnvJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, newError(http.StatusUnsupportedMediaType, api.CodeInvalidRequest, "Content-Type must be application/json")
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := checkEnvBody(body); err != nil {
		return nil, err
	}
	return body, nil
}

// checkEnvBody refuses, with a 400, a body that is not UTF-8, not JSON or
// gives a member twice.
func checkEnvBody(body []byte) error {
	if !utf8.Valid(body) {
		return errNotUTF8
	}
	if !json.Valid(body) {
		return badRequest("request body is not valid JSON")
	}
	if at, key, dup := envapi.DuplicateKey(body); dup {
		return duplicateKey(at, key)
	}
	return nil
}

// serveCall is POST /v1/sessions/{id}/executions/{sequence}/call: a
// service call of an open execution, authenticated by its invocation
// token, or of the controller context of the environment operation
// {sequence}, authenticated by the context's token.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request) {
	id, err := envSession(r)
	if err != nil {
		refuseUnread(w, r, errUnauthorized)
		return
	}
	seq, err := pathSequence(r, "sequence")
	if err != nil {
		refuseUnread(w, r, errUnauthorized)
		return
	}
	tok, ok := bearer(r)
	if !ok {
		refuseUnread(w, r, errUnauthorized)
		return
	}
	if s.opts.Route != nil && r.Header.Get(forwardedHeader) == "" {
		if err := s.checkInvocation(r.Context(), id, seq, tok); err != nil {
			refuseUnread(w, r, err)
			return
		}
		if s.forward(w, r) {
			return
		}
	}
	g, ok := s.opts.Bindings.Authorize(id, seq, tok)
	if !ok {
		refuseUnread(w, r, errUnauthorized)
		return
	}
	var svc session.Services
	if g.Controller {
		svc, err = s.opts.Engine.Controller(id, seq)
	} else {
		svc, err = s.opts.Engine.Execution(id, seq)
	}
	if err != nil {
		s.opts.Bindings.Revoke(g)
		refuseUnread(w, r, errUnauthorized)
		return
	}
	body, err := s.readEnvJSON(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	var call envapi.ExecutionCall
	if err := envapi.Strict(body, &call); err != nil {
		WriteError(w, invalidField(cleanMessage(err.Error())))
		return
	}
	if !g.Controller && carriesOutcome(call.Method) {
		if err := s.checkOutcomeSize(call.Method+" call", int64(len(body))); err != nil {
			WriteError(w, err)
			return
		}
	}
	// Neither the grant's token nor the other secrets of its operation
	// (the environment's credential, its other tokens) reach the journal,
	// even when the caller writes them into what it sends.
	out, err := svc.Call(r.Context(), call.Method, g.Redact(call.Input, tok))
	switch {
	case err == nil:
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		writeRaw(w, http.StatusOK, out)
	case errors.Is(err, session.ErrExecutionClosed):
		s.opts.Bindings.Revoke(g)
		WriteError(w, errUnauthorized)
	case errors.Is(err, session.ErrUnknownMethod), errors.Is(err, session.ErrNotGranted):
		WriteError(w, newError(http.StatusForbidden, api.CodeNotGranted, "method "+strconv.Quote(call.Method)+" is not granted to this execution"))
	default:
		WriteError(w, err)
	}
}

// checkInvocation authenticates, on any node of a cluster, the invocation
// token of a call before it is forwarded to the session's owner: the
// token must have been minted by the cluster for this execution, under
// the epoch of the session's live lease. A token minted before a
// failover is refused (401): its execution was interrupted. Whether the
// token is still live only its owner knows (Bindings.Authorize).
func (s *Server) checkInvocation(ctx context.Context, id string, seq uint64, tok string) error {
	epoch, ok, err := s.opts.Bindings.VerifyInvocation(id, seq, tok)
	if err != nil {
		s.log.Error("invocation key unavailable", "err", err)
		return newError(http.StatusServiceUnavailable, api.CodeOverloaded, "invocation key unavailable")
	}
	if !ok {
		return errUnauthorized
	}
	if s.opts.LeaseEpoch == nil {
		return nil
	}
	live, err := s.opts.LeaseEpoch(ctx, id)
	if err != nil {
		return newError(http.StatusServiceUnavailable, api.CodeOverloaded, "the storage backend is unavailable; retry later")
	}
	if live != epoch {
		return errUnauthorized
	}
	return nil
}

// serveReport is POST /v1/sessions/{id}/environments/{env}/{sequence}/events:
// an environment report authenticated by the binding's reporter token.
func (s *Server) serveReport(w http.ResponseWriter, r *http.Request, id, env string, bseq uint64) {
	tok, _ := bearer(r)
	ok, err := s.opts.Bindings.AuthorizeReporter(id, env, bseq, tok)
	if err != nil {
		s.log.Error("reporter key unavailable", "err", err)
		refuseUnread(w, r, newError(http.StatusServiceUnavailable, api.CodeOverloaded, "reporter key unavailable"))
		return
	}
	if !ok {
		refuseUnread(w, r, errUnauthorized)
		return
	}
	if s.forward(w, r) {
		return
	}
	body, err := s.readEnvJSON(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	ev, err := envapi.DecodeReporterEvent(body)
	if err != nil {
		WriteError(w, invalidField(cleanMessage(err.Error())))
		return
	}
	// Neither the reporter's token nor the credential the binding's
	// operations carry reaches the journal, even when the provider
	// writes them into its report.
	rep := session.Report{Type: ev.Type, EventType: ev.EventType, Data: ev.Data,
		Redact: func(op session.Operation, raw json.RawMessage) json.RawMessage {
			return s.opts.Bindings.RedactReport(op, raw, tok)
		}}
	if ev.Output != nil {
		rep.Output, _ = json.Marshal(ev.Output)
	}
	seq, err := s.opts.Engine.Report(r.Context(), id, api.EnvironmentRef{Name: env, Sequence: bseq}, rep)
	switch {
	case err == nil:
		WriteJSON(w, http.StatusOK, struct {
			Sequence uint64 `json:"sequence"`
		}{seq})
	case errors.Is(err, session.ErrExecutionClosed), errors.Is(err, session.ErrNotFound):
		WriteError(w, newError(http.StatusNotFound, api.CodeNotFound, "the binding is closed or was replaced"))
	default:
		WriteError(w, err)
	}
}

// serveControl is POST /v1/sessions/{id}/environments: an
// EnvironmentControlRequest on behalf of the operator.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	if _, err := idempotencyKey(r); err != nil {
		WriteError(w, err)
		return
	}
	id, err := envSession(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	body, err := s.readEnvJSON(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	req, err := envapi.DecodeControlRequest(body)
	if err != nil {
		WriteError(w, invalidField(cleanMessage(err.Error())))
		return
	}
	s.Idempotent(w, r, ScopeControl, body, func(ctx context.Context) (int, any, error) {
		out, err := s.opts.Engine.Control(ctx, id, req)
		return http.StatusOK, out, err
	})
}

// serveEnvCall is POST /v1/sessions/{id}/environments/{env}/calls/{name}
// with {"input": ANY}, answering {"output": ANY}; it is served under
// PatternBinding, whose {last} is the {name}.
func (s *Server) serveEnvCall(w http.ResponseWriter, r *http.Request) {
	if _, err := idempotencyKey(r); err != nil {
		WriteError(w, err)
		return
	}
	id, err := envSession(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	env, name := r.PathValue("env"), r.PathValue("last")
	if !envapi.ValidIdentifier(env) || !envapi.ValidIdentifier(name) {
		WriteError(w, badRequest("malformed environment or method name"))
		return
	}
	body, err := s.readEnvJSON(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	var in struct {
		Input json.RawMessage `json:"input"`
	}
	if err := envapi.Strict(body, &in); err != nil {
		WriteError(w, invalidField(cleanMessage(err.Error())))
		return
	}
	if in.Input == nil {
		// Required (JSON null is a value): a body without it is no call
		// to send.
		WriteError(w, invalidField("input is required (null for none)"))
		return
	}
	s.Idempotent(w, r, ScopeCall, body, func(ctx context.Context) (int, any, error) {
		out, err := s.opts.Engine.CallEnvironment(ctx, id, env, name, in.Input)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, struct {
			Output json.RawMessage `json:"output"`
		}{out}, nil
	})
}
