package loophost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"

	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/httpapi"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// Admission statuses.
const (
	StatusAdmitted = "admitted"
	StatusRejected = "rejected"
)

// Admission is the AgentloopAdmission answered by POST and GET
// /v1/agentloops.
type Admission struct {
	ID     string             `json:"id"`
	Status string             `json:"status"`
	Error  *brainapi.ApiError `json:"error,omitempty"`
}

func rejected(id, msg string) Admission {
	return Admission{ID: id, Status: StatusRejected, Error: &brainapi.ApiError{Code: brainapi.CodeInvalidRequest, Message: msg}}
}

// Admit validates and compiles module and, when it can run, stores it as
// <id>.wasm. A module that cannot run answers a rejected Admission (and is
// remembered as rejected); an error is answered only for an empty or
// oversize module and for storage failures. Admitting the same bytes again
// answers the same Admission without compiling.
func (h *Host) Admit(ctx context.Context, module []byte) (Admission, error) {
	if len(module) == 0 {
		return Admission{}, ErrEmpty
	}
	if int64(len(module)) > h.opts.MaxModuleBytes {
		return Admission{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(module), h.opts.MaxModuleBytes)
	}
	id := idOf(module)
	h.admitMu.Lock()
	defer h.admitMu.Unlock()
	if a, ok := h.Admission(id); ok {
		return a, nil
	}
	h.mu.RLock()
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return Admission{}, ErrClosed
	}
	m, err := h.compile(ctx, id, module)
	if err != nil {
		if ctx.Err() != nil {
			return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
		}
		a := rejected(id, err.Error())
		note, _ := json.Marshal(a)
		if err := fsutil.WriteFileAtomic(filepath.Join(h.opts.Dir, id+".rejected"), note, 0o600); err != nil {
			return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
		}
		h.mu.Lock()
		h.rejects[id] = a
		h.mu.Unlock()
		return a, nil
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(h.opts.Dir, id+".wasm"), module, 0o600); err != nil {
		_ = m.cm.Close(ctx)
		return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
	}
	_ = os.Remove(filepath.Join(h.opts.Dir, id+".rejected"))
	h.mu.Lock()
	h.loaded[id] = m
	delete(h.rejects, id)
	h.mu.Unlock()
	return Admission{ID: id, Status: StatusAdmitted}, nil
}

// Admission answers what is known of module id.
func (h *Host) Admission(id string) (Admission, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if _, ok := h.loaded[id]; ok {
		return Admission{ID: id, Status: StatusAdmitted}, true
	}
	a, ok := h.rejects[id]
	return a, ok
}

// Mount mounts the admission routes on s behind the server token:
//
//	POST /v1/agentloops       application/octet-stream module bytes,
//	                          Idempotency-Key; 200 AgentloopAdmission
//	GET  /v1/agentloops/{id}  200 AgentloopAdmission, 404 when unknown
//
// An empty body answers 400 and an oversize one 413, before the key is
// claimed; another Content-Type than application/octet-stream answers 415.
// It has the signature of brain.Config.Mount.
func (h *Host) Mount(s *httpapi.Server) error {
	s.Handle("POST /v1/agentloops", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.post(s, w, r) }))
	s.Handle("GET /v1/agentloops/{id}", http.HandlerFunc(h.get))
	return nil
}

func apiError(status int, code, msg string) *httpapi.Error {
	return &httpapi.Error{Status: status, Body: brainapi.ApiError{Code: code, Message: msg, Retryable: brainapi.DefaultRetryable(code)}}
}

func (h *Host) post(s *httpapi.Server, w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/octet-stream" {
			httpapi.WriteError(w, apiError(http.StatusUnsupportedMediaType, brainapi.CodeInvalidRequest, "the body must be application/octet-stream module bytes"))
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxModuleBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		httpapi.WriteError(w, apiError(http.StatusRequestEntityTooLarge, brainapi.CodeInvalidRequest, fmt.Sprintf("the module exceeds %d bytes", h.opts.MaxModuleBytes)))
		return
	case err != nil:
		httpapi.WriteError(w, apiError(http.StatusBadRequest, brainapi.CodeInvalidRequest, "reading the body: "+err.Error()))
		return
	case len(body) == 0:
		httpapi.WriteError(w, apiError(http.StatusBadRequest, brainapi.CodeInvalidRequest, "the body must be non-empty module bytes"))
		return
	}
	s.Idempotent(w, r, "agentloops.admit", body, func(ctx context.Context) (int, any, error) {
		a, err := h.Admit(ctx, body)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, a, nil
	})
}

func (h *Host) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validID(id) {
		httpapi.WriteError(w, apiError(http.StatusBadRequest, brainapi.CodeInvalidRequest, "an agentloop id is 64 lowercase hex digits"))
		return
	}
	a, ok := h.Admission(id)
	if !ok {
		httpapi.WriteError(w, apiError(http.StatusNotFound, brainapi.CodeNotFound, "no such agentloop"))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, a)
}
