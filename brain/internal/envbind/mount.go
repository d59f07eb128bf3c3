package envbind

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/httpapi"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Idempotency scopes of the control routes.
const (
	ScopeControl = "environment_control"
	ScopeCall    = "environment_call"
)

// Route patterns mounted by Mount.
const (
	PatternCall     = "POST /v1/sessions/{id}/executions/{sequence}/call"
	PatternControl  = "POST /v1/sessions/{id}/environments"
	PatternBinding  = "POST /v1/sessions/{id}/environments/{env}/{seg}/{last}"
	patternCallsFwd = "POST /v1/sessions/{id}/environments/{env}/calls/{name}/{$}"
)

// Mount loads the reporter key, attaches the API's engine and mounts the
// routes on the session API. It fits brain.Config.Mount.
//
// The reporter route (.../environments/{env}/{sequence}/events) and the
// environment call route (.../environments/{env}/calls/{name}) share one
// mux pattern; the call branch is forwarded to an authenticated pattern
// (the same path with a trailing slash), so it needs the server token
// like every other control route.
func (b *Binder) Mount(s *httpapi.Server) error {
	if _, err := b.serverKey(); err != nil {
		return err
	}
	b.Attach(s.Engine())
	s.HandleOpen(PatternCall, http.HandlerFunc(b.serveCall))
	s.Handle(PatternControl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.serveControl(w, r, s) }))
	s.Handle(patternCallsFwd, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.serveEnvCall(w, r, s) }))
	s.HandleOpen(PatternBinding, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("seg") == "calls" {
			fwd := r.Clone(r.Context())
			fwd.URL.Path += "/"
			fwd.URL.RawPath = ""
			s.ServeHTTP(w, fwd)
			return
		}
		id, rerr := pathSession(r)
		if rerr != nil {
			rerr.write(w)
			return
		}
		env := r.PathValue("env")
		bseq, rerr := pathSequence(r, "seg")
		if rerr != nil || r.PathValue("last") != "events" || !envapi.ValidIdentifier(env) {
			apiError(w, http.StatusNotFound, api.CodeNotFound, "no such route")
			return
		}
		b.serveReport(w, r, id, env, bseq)
	}))
	return nil
}

// serveControl is POST /v1/sessions/{id}/environments: an
// EnvironmentControlRequest on behalf of the operator.
func (b *Binder) serveControl(w http.ResponseWriter, r *http.Request, s *httpapi.Server) {
	if r.Header.Get("Idempotency-Key") == "" || len(r.Header.Get("Idempotency-Key")) > 256 {
		apiError(w, http.StatusBadRequest, api.CodeInvalidRequest, "idempotency-key must be between 1 and 256 bytes")
		return
	}
	id, rerr := pathSession(r)
	if rerr != nil {
		rerr.write(w)
		return
	}
	body, rerr := b.readJSON(w, r)
	if rerr != nil {
		rerr.write(w)
		return
	}
	req, err := envapi.DecodeControlRequest(body)
	if err != nil {
		fieldError(err).write(w)
		return
	}
	e := b.engineOr503(w)
	if e == nil {
		return
	}
	s.Idempotent(w, r, ScopeControl, body, func(ctx context.Context) (int, any, error) {
		out, err := e.Control(ctx, id, req)
		return http.StatusOK, out, err
	})
}

// serveEnvCall is POST /v1/sessions/{id}/environments/{env}/calls/{name}
// with {"input": ANY}, answering {"output": ANY}.
func (b *Binder) serveEnvCall(w http.ResponseWriter, r *http.Request, s *httpapi.Server) {
	if r.Header.Get("Idempotency-Key") == "" || len(r.Header.Get("Idempotency-Key")) > 256 {
		apiError(w, http.StatusBadRequest, api.CodeInvalidRequest, "idempotency-key must be between 1 and 256 bytes")
		return
	}
	id, rerr := pathSession(r)
	if rerr != nil {
		rerr.write(w)
		return
	}
	env, name := r.PathValue("env"), r.PathValue("name")
	if !envapi.ValidIdentifier(env) || !envapi.ValidIdentifier(name) {
		apiError(w, http.StatusBadRequest, api.CodeInvalidRequest, "malformed environment or method name")
		return
	}
	body, rerr := b.readJSON(w, r)
	if rerr != nil {
		rerr.write(w)
		return
	}
	var in struct {
		Input json.RawMessage `json:"input"`
	}
	if err := envapi.Strict(body, &in); err != nil {
		fieldError(err).write(w)
		return
	}
	e := b.engineOr503(w)
	if e == nil {
		return
	}
	// The digest covers the path without the forwarding slash.
	orig := r.Clone(r.Context())
	orig.URL.Path = r.URL.Path[:len(r.URL.Path)-1]
	s.Idempotent(w, orig, ScopeCall, body, func(ctx context.Context) (int, any, error) {
		out, err := e.CallEnvironment(ctx, id, env, name, in.Input)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, struct {
			Output json.RawMessage `json:"output"`
		}{out}, nil
	})
}
