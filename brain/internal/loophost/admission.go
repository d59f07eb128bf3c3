package loophost

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	brainapi "github.com/brain-in-go/brain/brain/api"
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
		if err := writeFileAtomic(h.opts.Dir, id+".rejected", note); err != nil {
			return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
		}
		h.mu.Lock()
		h.rejects[id] = a
		h.mu.Unlock()
		return a, nil
	}
	if err := writeFileAtomic(h.opts.Dir, id+".wasm", module); err != nil {
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

// writeFileAtomic writes dir/name through a synced temporary file and a
// rename, then syncs dir.
func writeFileAtomic(dir, name string, b []byte) (err error) {
	f, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(b); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
