package loophost

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"github.com/brain-in-go/brain/brain/agentloop"
	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// Admission statuses.
const (
	StatusAdmitted = "admitted"
	StatusRejected = "rejected"
)

// ErrStorage is wrapped when a module could not be stored, or compiled
// into or read from the compilation cache (a full disk): the module was
// not judged, nothing is remembered of it, and admitting it again once
// storage works judges it. It wraps session.ErrUnavailable, which the API
// answers 503 without consuming the request's Idempotency-Key.
var ErrStorage = fmt.Errorf("loophost: module storage failed: %w", session.ErrUnavailable)

// storageError reports whether err, from compiling a module, is a failure
// to read or write the compilation cache rather than a judgement of the
// module.
func storageError(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	return errors.As(err, &pe) || errors.As(err, &le)
}

// ErrDamaged is wrapped when a module fetched from a cluster's shared
// store does not hash to its id: it is neither compiled nor run.
var ErrDamaged = errors.New("loophost: shared module does not match its id")

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

// note is a stored rejection: the Admission answered, and the terms it
// was judged under (Host.judged).
type note struct {
	Admission
	Judged string `json:"judged"`
}

// decodeNote decodes the stored rejection note of module id. Only a note
// as rejected writes it is one: the module's id, status rejected, an
// error with a code and a message, and the terms judged it was judged
// under. Anything else is damage, or a judgement under another linear
// memory limit or other host functions, and is ignored, so that admitting
// the module again compiles it and rewrites the note, instead of answering
// a status no module stands behind or one the node's terms no longer give.
func decodeNote(id string, b []byte, judged string) (Admission, bool) {
	var n note
	if err := json.Unmarshal(b, &n); err != nil || n.ID != id || n.Status != StatusRejected ||
		n.Error == nil || n.Error.Code == "" || n.Error.Message == "" || n.Judged != judged {
		return Admission{}, false
	}
	return n.Admission, true
}

// judgedUnder names the terms a module is judged under: the linear memory
// limit in pages and the host functions provided (the host module's and
// WASI's, with their types).
func judgedUnder(pages int64, wasi api.Module) string {
	var fns []string
	for name, s := range hostSignatures {
		fns = append(fns, agentloop.HostModule+"."+name+signature(s[0], s[1]))
	}
	for name, d := range wasi.ExportedFunctionDefinitions() {
		fns = append(fns, "wasi."+name+signature(d.ParamTypes(), d.ResultTypes()))
	}
	slices.Sort(fns)
	sum := sha256.Sum256([]byte(strings.Join(fns, "\n")))
	return fmt.Sprintf("memory_pages=%d host=%x", pages, sum[:8])
}

// Admit validates and compiles an agentloop module and, when it can run,
// stores it as <id>.wasm. A module that cannot run answers a rejected
// Admission (and is remembered as rejected); an error is answered only for
// an empty or oversize module and for storage failures. Admitting the
// same bytes again answers the same Admission without compiling.
func (h *Host) Admit(ctx context.Context, module []byte) (Admission, error) {
	return h.admit(ctx, h.loops, module)
}

// Admission answers what is known of agentloop module id on this node.
func (h *Host) Admission(id string) (Admission, bool) { return h.admission(h.loops, id) }

// Find is Admission that also knows, with Options.Shared, the modules
// admitted on other nodes of the cluster (fetching and compiling one it
// finds). It fails only when the shared store cannot be read, or when a
// module stored here still cannot be compiled for a storage failure
// (ErrStorage).
func (h *Host) Find(ctx context.Context, id string) (Admission, bool, error) {
	if err := h.locate(ctx, h.loops, id); err != nil {
		return Admission{}, false, err
	}
	a, ok := h.admission(h.loops, id)
	return a, ok, nil
}

// FindTool is Find for Tool modules (GET /v1/tools/{id}): with
// Options.SharedTools it also knows the Tools admitted on other nodes.
func (h *Host) FindTool(ctx context.Context, id string) (Admission, bool, error) {
	if h.tools == nil {
		return Admission{}, false, nil
	}
	if err := h.locate(ctx, h.tools, id); err != nil {
		return Admission{}, false, err
	}
	a, ok := h.admission(h.tools, id)
	return a, ok, nil
}

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
	if h.settled(c, id) {
		// Judged before: answered without waiting for another admission.
		a, _ := h.admission(c, id)
		return a, nil
	}
	unlock, err := h.lockAdmission(ctx)
	if err != nil {
		return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
	}
	defer unlock()
	if h.settled(c, id) {
		// Judged before. The bytes of a damaged stored module were not:
		// the genuine bytes are judged now.
		a, _ := h.admission(c, id)
		return a, nil
	}
	h.mu.RLock()
	damaged, closed := c.damaged[id], h.closed
	h.mu.RUnlock()
	if closed {
		return Admission{}, ErrClosed
	}
	m, err := h.compile(ctx, c.kind, id, module)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrStorage) {
			return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
		}
		a := rejected(id, err.Error())
		b, _ := json.Marshal(note{Admission: a, Judged: h.judged})
		if err := fsutil.WriteFileAtomic(filepath.Join(c.dir, id+".rejected"), b, 0o600); err != nil {
			return Admission{}, fmt.Errorf("loophost: admit %s: %w: %w", id, ErrStorage, err)
		}
		if damaged {
			// Read at the next start, the damaged bytes would stand for
			// the module instead of the note.
			if err := os.Remove(filepath.Join(c.dir, id+".wasm")); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return Admission{}, fmt.Errorf("loophost: admit %s: %w: %w", id, ErrStorage, err)
			}
		}
		h.mu.Lock()
		c.rejects[id] = a
		delete(c.damaged, id)
		delete(c.pending, id)
		h.mu.Unlock()
		return a, nil
	}
	if c.shared != nil {
		// Shared first: an admission answered is runnable on every node.
		if _, err := c.shared.PutModule(ctx, module); err != nil {
			_ = m.cm.Close(ctx)
			return Admission{}, fmt.Errorf("loophost: admit %s: %w", id, err)
		}
	}
	if err := h.store(ctx, c, id, module, m); err != nil {
		return Admission{}, err
	}
	return Admission{ID: id, Status: StatusAdmitted}, nil
}

// store keeps an admitted, compiled module in c's directory and catalog.
func (h *Host) store(ctx context.Context, c *catalog, id string, module []byte, m *module) error {
	if err := fsutil.WriteFileAtomic(filepath.Join(c.dir, id+".wasm"), module, 0o600); err != nil {
		_ = m.cm.Close(ctx)
		return fmt.Errorf("loophost: admit %s: %w: %w", id, ErrStorage, err)
	}
	_ = os.Remove(filepath.Join(c.dir, id+".rejected"))
	h.mu.Lock()
	c.loaded[id] = m
	delete(c.rejects, id)
	delete(c.pending, id)
	delete(c.damaged, id)
	h.mu.Unlock()
	return nil
}

// locate makes module id of catalog c known here when it can be: a stored
// module that could not be compiled for a storage failure is compiled
// again (compilePending), and one admitted on another node is fetched
// (fetchShared). Every lookup of a module by id goes through it.
func (h *Host) locate(ctx context.Context, c *catalog, id string) error {
	if err := h.compilePending(ctx, c, id); err != nil {
		return err
	}
	return h.fetchShared(ctx, c, id)
}

// compilePending compiles the stored module id of c when an earlier
// attempt failed for a storage failure (a full disk under the compilation
// cache), so that such a failure lasts only as long as its cause. It
// answers an error wrapping ErrStorage while compiling still fails that
// way.
func (h *Host) compilePending(ctx context.Context, c *catalog, id string) error {
	h.mu.RLock()
	pending := c.pending[id]
	h.mu.RUnlock()
	if !pending {
		return nil
	}
	unlock, err := h.lockAdmission(ctx)
	if err != nil {
		return fmt.Errorf("loophost: compile %s: %w", id, err)
	}
	defer unlock()
	h.mu.RLock()
	pending, closed := c.pending[id], h.closed
	h.mu.RUnlock()
	if !pending {
		return nil
	}
	if closed {
		return ErrClosed
	}
	err = h.loadStored(ctx, c, id)
	if errors.Is(err, fs.ErrNotExist) {
		// Removed from the directory since: unknown here.
		h.mu.Lock()
		delete(c.pending, id)
		h.mu.Unlock()
		return nil
	}
	if err != nil && !errors.Is(err, ErrStorage) {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return err
}

// fetchShared makes module id of catalog c, when this node does not know
// it and c's shared store (Options.Shared, Options.SharedTools) holds it,
// admitted here too: its bytes are checked against id, compiled into this
// node's cache and stored in c's directory. Unknown everywhere is not an
// error (the caller answers not admitted); bytes that do not match id are
// never compiled.
func (h *Host) fetchShared(ctx context.Context, c *catalog, id string) error {
	if c.shared == nil || !validID(id) {
		return nil
	}
	if h.settled(c, id) {
		return nil
	}
	unlock, err := h.lockAdmission(ctx)
	if err != nil {
		return fmt.Errorf("loophost: fetch %s: %w", id, err)
	}
	defer unlock()
	if h.settled(c, id) {
		return nil
	}
	h.mu.RLock()
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	b, found, err := c.shared.SharedModule(ctx, id)
	if err != nil {
		return fmt.Errorf("loophost: fetch %s: %w", id, err)
	}
	if !found {
		return nil
	}
	if idOf(b) != id {
		return fmt.Errorf("loophost: fetch %s: %w", id, ErrDamaged)
	}
	m, err := h.compile(ctx, c.kind, id, b)
	if errors.Is(err, ErrStorage) {
		return fmt.Errorf("loophost: fetch %s: %w", id, err)
	}
	if err != nil {
		// Admitted elsewhere but not runnable here (such as a lower
		// memory limit): remembered as rejected on this node.
		h.mu.Lock()
		c.rejects[id] = rejected(id, err.Error())
		delete(c.damaged, id)
		h.mu.Unlock()
		return nil
	}
	return h.store(ctx, c, id, b, m)
}

// settled reports whether this node has judged the bytes of module id of
// c: admitted or rejected, but not damaged on disk.
func (h *Host) settled(c *catalog, id string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	_, rejected := c.rejects[id]
	return c.loaded[id] != nil || rejected && !c.damaged[id]
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

// lockAdmission waits until no other admission or compilation of a named
// module runs, and answers the function that ends this one. Admissions
// are serial (each compiles into the runtime, and Close waits for the one
// under way), but a caller waits only as long as ctx lasts: when ctx ends
// first it answers ctx's error (wrapping its cause), and once Close has
// begun ErrClosed, at once.
func (h *Host) lockAdmission(ctx context.Context) (unlock func(), err error) {
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	select {
	case h.admitting <- struct{}{}:
		return func() { <-h.admitting }, nil
	case <-ctx.Done():
		return nil, ctxError(ctx)
	case <-h.closing:
		return nil, ErrClosed
	}
}

// ctxError is the error of ended ctx: its cause, wrapping also
// context.Canceled or context.DeadlineExceeded when the cause is another
// error.
func ctxError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return cause
	}
	return fmt.Errorf("%w (%w)", cause, err)
}
