package loophost

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	brainapi "github.com/brain-in-go/brain/brain/api"
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
