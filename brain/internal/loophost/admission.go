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

// Admit validates and compiles an agentloop module and, when it can run,
// stores it as <id>.wasm. A module that cannot run answers a rejected
// Admission (and is remembered as rejected); an error is answered only for
// an empty or oversize module and for storage failures. Admitting the
// same bytes again answers the same Admission without compiling.
func (h *Host) Admit(ctx context.Context, module []byte) (Admission, error) {
	return h.admit(ctx, h.loops, module)
}

// Admission answers what is known of agentloop module id.
func (h *Host) Admission(id string) (Admission, bool) { return h.admission(h.loops, id) }

// AdmitTool is Admit for Tool modules (the ToolAdmission of POST
// /v1/tools); it answers ErrNoTools when Options.ToolsDir is empty.
func (h *Host) AdmitTool(ctx context.Context, module []byte) (Admission, error) {
	if h.tools == nil {
		return Admission{}, ErrNoTools
	}
	return h.admit(ctx, h.tools, module)
}

// ToolsEnabled reports whether the host admits Tools (Options.ToolsDir).
func (h *Host) ToolsEnabled() bool { return h.tools != nil }

// ToolAdmission answers what is known of Tool module id.
func (h *Host) ToolAdmission(id string) (Admission, bool) {
	if h.tools == nil {
		return Admission{}, false
	}
	return h.admission(h.tools, id)
}

func (h *Host) admit(ctx context.Context, c *catalog, module []byte) (Admission, error) {
	if len(module) == 0 {
		return Admission{}, ErrEmpty
	}
	if int64(len(module)) > h.opts.MaxModuleBytes {
		return Admission{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(module), h.opts.MaxModuleBytes)
	}
	id := idOf(module)
	h.admitMu.Lock()
	defer h.admitMu.Unlock()
	if a, ok := h.admission(c, id); ok {
		return a, nil
	}
	h.mu.RLock()
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return Admission{}, ErrClosed
	}
	m, err := h.compile(ctx, c.kind, id, module)
	if err != nil {
		if ctx.Err() != nil {
			return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
		}
		a := rejected(id, err.Error())
		note, _ := json.Marshal(a)
		if err := fsutil.WriteFileAtomic(filepath.Join(c.dir, id+".rejected"), note, 0o600); err != nil {
			return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
		}
		h.mu.Lock()
		c.rejects[id] = a
		h.mu.Unlock()
		return a, nil
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(c.dir, id+".wasm"), module, 0o600); err != nil {
		_ = m.cm.Close(ctx)
		return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
	}
	_ = os.Remove(filepath.Join(c.dir, id+".rejected"))
	h.mu.Lock()
	c.loaded[id] = m
	delete(c.rejects, id)
	h.mu.Unlock()
	return Admission{ID: id, Status: StatusAdmitted}, nil
}

func (h *Host) admission(c *catalog, id string) (Admission, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if _, ok := c.loaded[id]; ok {
		return Admission{ID: id, Status: StatusAdmitted}, true
	}
	a, ok := c.rejects[id]
	return a, ok
}
