package loophost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// Defaults of Options.
const (
	DefaultMaxLinearMemoryBytes = 128 << 20
	DefaultMaxOutputBytes       = 64 << 10
	DefaultMaxModuleBytes       = 64 << 20
	DefaultMaxInstances         = 8
	DefaultMaxToolOutputBytes   = 32 << 20
	DefaultMaxScratchBytes      = 64 << 20
)

const pageBytes = 1 << 16

// Errors of the host.
var (
	// ErrEmpty is answered for an empty module.
	ErrEmpty = errors.New("loophost: the module is empty")
	// ErrTooLarge is answered for a module over Options.MaxModuleBytes.
	ErrTooLarge = errors.New("loophost: the module is too large")
	// ErrNotAdmitted is wrapped when an implementation names a module
	// that is not admitted (unknown or rejected).
	ErrNotAdmitted = errors.New("loophost: agentloop is not admitted")
	// ErrUnsupported is wrapped for an implementation this host cannot
	// run.
	ErrUnsupported = errors.New("loophost: unsupported agentloop implementation")
	// ErrClosed is answered after Close.
	ErrClosed = errors.New("loophost: host is closed")
)

// Options configures a Host.
type Options struct {
	// Dir is the agentloops directory (<data dir>/agentloops): admitted
	// modules, remembered rejections and the compilation cache. Required.
	Dir string
	// CacheDir is wazero's compilation cache (default Dir/cache). Hosts
	// may share it.
	CacheDir string
	// MaxLinearMemoryBytes bounds a guest's linear memory, rounded down to
	// 64 KiB pages (0: 128 MiB).
	MaxLinearMemoryBytes int64
	// MaxOutputBytes bounds the captured stdout and stderr of one
	// activation, each; further bytes are dropped (0: 64 KiB).
	MaxOutputBytes int
	// MaxModuleBytes bounds an admitted module (0: 64 MiB).
	MaxModuleBytes int64
	// BuiltinWasm resolves {"type":"brain_builtin","name":"default"} to
	// the embedded Wasm build of the default loop instead of the native
	// agentloop.Default. The embedded module is compiled by Open.
	BuiltinWasm bool
	// Output, if set, receives the captured stdout and stderr of every
	// activation and tool invocation after its instance is closed.
	Output func(id string, stdout, stderr []byte)

	// Shared, if set, keeps the bytes of admitted agentloop modules where
	// every node of a cluster reads them: admission stores them there
	// before answering, and a module admitted on another node is fetched
	// from there (checked against its id), compiled into this node's
	// cache and stored in Dir when it is first named.
	Shared SharedModules
	// SharedTools is Shared for Tool modules (a store of its own: an id
	// admitted as a Tool is not an agentloop, nor the reverse); a Tool
	// fetched from it is stored in ToolsDir.
	SharedTools SharedModules

	// ToolsDir is the tools directory (<data dir>/tools): admitted Tool
	// modules and remembered rejections, laid out as Dir. Empty disables
	// Tools.
	ToolsDir string
	// MaxInstances bounds the Wasm instances alive at once, agentloop
	// activations and tool invocations together
	// (BRAIN_MAX_CORE_INSTANCES; 0: DefaultMaxInstances). One more fails
	// at once with code overloaded; nothing queues.
	MaxInstances int
	// MaxToolOutputBytes bounds the answer of one tool invocation and
	// the input of each of its service calls (0:
	// DefaultMaxToolOutputBytes); a larger answer fails the call with
	// output_limit.
	MaxToolOutputBytes int
	// FilesystemAllow bounds the filesystem grants of Tools
	// (BRAIN_ENV_FILESYSTEM_ALLOW): absolute host directories under which
	// a workspace grant may name its directory, and the entry "scratch",
	// which allows scratch grants. Empty denies every filesystem grant.
	FilesystemAllow []string
	// MaxScratchBytes bounds the bytes one invocation's scratch
	// directory holds, each file or directory counting 4096 besides the
	// bytes of the files (BRAIN_MAX_SCRATCH_BYTES; 0:
	// DefaultMaxScratchBytes, negative is refused): a write, a pwrite, a
	// truncate or a create that would grow it past it fails with ENOSPC.
	MaxScratchBytes int64
	// SecretAllow maps the secret names a Tool may be granted to the host
	// directories mounted read-only at /secrets/<name>
	// (BRAIN_ENV_SECRET_ALLOW). Empty denies every secret grant.
	SecretAllow map[string]string
	// Tracer, when set, starts a span for every environment operation the
	// built-in environment answers itself (nil: none).
	Tracer trace.Tracer
}

// SharedModules is a store of admitted module bytes every node of a
// cluster shares (the PostgreSQL backend's).
type SharedModules interface {
	// PutModule stores the bytes of an admitted module under their
	// SHA-256 (hex), which it answers; storing them again is a no-op.
	PutModule(ctx context.Context, b []byte) (string, error)
	// SharedModule answers the bytes stored under id, found false when
	// there are none.
	SharedModule(ctx context.Context, id string) (b []byte, found bool, err error)
}

// Host compiles, admits and runs Wasm agentloops. It is safe for
// concurrent use.
type Host struct {
	opts  Options
	rt    wazero.Runtime
	cache wazero.CompilationCache
	base  wazero.ModuleConfig
	wasi  api.Module
	// judged names what a rejection depends on besides the module: the
	// linear memory limit and the host functions provided. A rejection
	// note written under other terms is not taken (see decodeNote).
	judged string

	// admitting holds a value while an admission, or a compilation of a
	// module named here (compilePending, fetchShared), compiles into the
	// runtime: they run one at a time (lockAdmission).
	admitting chan struct{}
	// closing is closed when Close begins: nothing waits for admitting
	// once it is.
	closing chan struct{}
	mu      sync.RWMutex
	loops   *catalog
	tools   *catalog
	builtin *module
	closed  bool
	// running counts activations under way; Close cancels them through
	// stops and waits for them before it closes the runtime, since
	// wazero's runtime must not be closed under an instance still
	// starting.
	running sync.WaitGroup
	stops   map[*activation]context.CancelFunc

	slots   chan struct{} // one per live instance (Options.MaxInstances)
	invokes *invocations  // running tool invocations

	compiles    atomic.Int64
	activations atomic.Int64
}

// module is a compiled, admitted module.
type module struct {
	id   string
	kind kind
	cm   wazero.CompiledModule
	fn   agentloop.Func // agentloops only
}

// kind tells agentloop modules from Tool modules.
type kind int

const (
	kindLoop kind = iota
	kindTool
)

func (k kind) String() string {
	if k == kindTool {
		return "tool"
	}
	return "agentloop"
}

// catalog is the admitted and rejected modules of one kind, stored in dir.
type catalog struct {
	kind    kind
	dir     string
	shared  SharedModules // nil: this node's modules only
	loaded  map[string]*module
	rejects map[string]Admission
	// pending are the stored modules that could not be compiled for a
	// storage failure (ErrStorage): each is compiled when it is next
	// named (Host.locate).
	pending map[string]bool
	// damaged are the stored modules whose bytes do not hash to their
	// name: answered rejected, never compiled, and judged anew when their
	// bytes are admitted again.
	damaged map[string]bool
}

func newCatalog(k kind, dir string, shared SharedModules) *catalog {
	return &catalog{kind: k, dir: dir, shared: shared, loaded: map[string]*module{}, rejects: map[string]Admission{},
		pending: map[string]bool{}, damaged: map[string]bool{}}
}

// Open creates the host over opts.Dir and compiles every stored module
// (from the compilation cache when it holds them).
func Open(ctx context.Context, opts Options) (_ *Host, err error) {
	if opts.Dir == "" {
		return nil, errors.New("loophost: Options.Dir is required")
	}
	if opts.MaxLinearMemoryBytes == 0 {
		opts.MaxLinearMemoryBytes = DefaultMaxLinearMemoryBytes
	}
	pages := opts.MaxLinearMemoryBytes / pageBytes
	if pages < 1 || pages > 65536 {
		return nil, fmt.Errorf("loophost: linear memory limit %d bytes is outside 64 KiB..4 GiB", opts.MaxLinearMemoryBytes)
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.MaxModuleBytes <= 0 {
		opts.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if opts.MaxInstances <= 0 {
		opts.MaxInstances = DefaultMaxInstances
	}
	if opts.MaxToolOutputBytes <= 0 {
		opts.MaxToolOutputBytes = DefaultMaxToolOutputBytes
	}
	switch {
	case opts.MaxScratchBytes < 0:
		return nil, fmt.Errorf("loophost: MaxScratchBytes %d (BRAIN_MAX_SCRATCH_BYTES) is negative", opts.MaxScratchBytes)
	case opts.MaxScratchBytes == 0:
		opts.MaxScratchBytes = DefaultMaxScratchBytes
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("loophost: %w", err)
	}
	allow, err := checkAllow(opts.FilesystemAllow, opts.SecretAllow)
	if err != nil {
		return nil, err
	}
	if opts.CacheDir == "" {
		opts.CacheDir = filepath.Join(opts.Dir, "cache")
	}
	cache, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("loophost: compilation cache: %w", err)
	}
	if err := sweepCache(opts.CacheDir, false); err != nil {
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("loophost: compilation cache: %w", err)
	}
	h := &Host{
		opts:    opts,
		cache:   cache,
		loops:   newCatalog(kindLoop, opts.Dir, opts.Shared),
		slots:   make(chan struct{}, opts.MaxInstances),
		invokes: newInvocations(),

		admitting: make(chan struct{}, 1),
		closing:   make(chan struct{}),
	}
	h.opts.FilesystemAllow = allow
	if opts.ToolsDir != "" {
		if err := os.MkdirAll(opts.ToolsDir, 0o700); err != nil {
			_ = cache.Close(ctx)
			return nil, fmt.Errorf("loophost: %w", err)
		}
		if err := os.RemoveAll(filepath.Join(opts.ToolsDir, scratchDirName)); err != nil {
			_ = cache.Close(ctx)
			return nil, fmt.Errorf("loophost: scratch: %w", err)
		}
		h.tools = newCatalog(kindTool, opts.ToolsDir, opts.SharedTools)
	}
	h.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(pages)))
	defer func() {
		if err != nil {
			_ = h.rt.Close(ctx)
			_ = cache.Close(ctx)
		}
	}()
	if err := instantiateWASI(ctx, h.rt); err != nil {
		return nil, fmt.Errorf("loophost: wasi: %w", err)
	}
	h.wasi = h.rt.Module(wasi_snapshot_preview1.ModuleName)
	if err := h.instantiateHostModule(ctx); err != nil {
		return nil, err
	}
	h.base = wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize")
	h.judged = judgedUnder(pages, h.wasi)
	for _, c := range []*catalog{h.loops, h.tools} {
		if c == nil {
			continue
		}
		if err := h.load(ctx, c); err != nil {
			return nil, err
		}
	}
	if opts.BuiltinWasm {
		m, err := h.compile(ctx, kindLoop, builtin.DefaultID(), builtin.DefaultWasm())
		if err != nil {
			return nil, fmt.Errorf("loophost: embedded default loop: %w", err)
		}
		h.builtin = m
	}
	return h, nil
}

// load compiles the stored modules of c and reads its remembered
// rejections.
func (h *Host) load(ctx context.Context, c *catalog) error {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("loophost: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case fsutil.IsTemp(name):
			_ = os.Remove(filepath.Join(c.dir, name))
		case strings.HasSuffix(name, ".wasm") && validID(strings.TrimSuffix(name, ".wasm")):
			err := h.loadStored(ctx, c, strings.TrimSuffix(name, ".wasm"))
			if errors.Is(err, ErrStorage) {
				// Not judged: compiled when next named, or admitted.
				continue
			}
			if err != nil {
				return err
			}
		case strings.HasSuffix(name, ".rejected") && validID(strings.TrimSuffix(name, ".rejected")):
			b, err := fsutil.ReadRegular(filepath.Join(c.dir, name), maxNoteBytes)
			if errors.Is(err, fsutil.ErrNotRegular) || errors.Is(err, fsutil.ErrTooLarge) {
				continue // as a damaged note
			}
			if err != nil {
				return fmt.Errorf("loophost: %w", err)
			}
			a, ok := decodeNote(strings.TrimSuffix(name, ".rejected"), b, h.judged)
			if !ok {
				// A damaged note, or one written under other limits or
				// host functions: admitting the bytes again judges them
				// anew and rewrites it.
				continue
			}
			c.rejects[a.ID] = a
		}
	}
	return nil
}

// loadStored compiles the stored module id of c into its catalog: loaded,
// rejected when it cannot run, damaged (and rejected) when its bytes do not
// hash to id, or pending when it could not be compiled for a storage
// failure, which it answers (ErrStorage). It fails only when the file
// cannot be read.
func (h *Host) loadStored(ctx context.Context, c *catalog, id string) error {
	name := id + ".wasm"
	b, err := readStored(filepath.Join(c.dir, name), h.opts.MaxModuleBytes)
	damage := ""
	switch {
	case errors.Is(err, fsutil.ErrNotRegular):
		damage = fmt.Sprintf("stored module %s is not a regular file", name)
	case errors.Is(err, fsutil.ErrTooLarge):
		// Admitted under a higher limit, or grown on disk: not read,
		// and answered rejected until the limit allows it again.
		h.mu.Lock()
		delete(c.pending, id)
		c.rejects[id] = rejected(id, fmt.Sprintf("stored module %s holds more than the module size limit of %d bytes (BRAIN_MAX_MODULE_BYTES); it runs again once the limit allows it", name, h.opts.MaxModuleBytes))
		h.mu.Unlock()
		return nil
	case err != nil:
		return fmt.Errorf("loophost: %w", err)
	case idOf(b) != id:
		damage = fmt.Sprintf("stored module %s does not match its name (its bytes were damaged on disk)", name)
	}
	if damage != "" {
		h.mu.Lock()
		delete(c.pending, id)
		c.damaged[id] = true
		c.rejects[id] = rejected(id, damage+"; admitting the module again replaces it")
		h.mu.Unlock()
		return nil
	}
	m, err := h.compile(ctx, c.kind, id, b)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case errors.Is(err, ErrStorage):
		// The stored module stands for id, not a rejection note left
		// beside it.
		c.pending[id] = true
		delete(c.rejects, id)
		return fmt.Errorf("loophost: stored module %s: %w", id, err)
	case err != nil:
		delete(c.pending, id)
		c.rejects[id] = rejected(id, err.Error())
	default:
		delete(c.pending, id)
		c.loaded[id] = m
	}
	return nil
}

// maxNoteBytes bounds a remembered rejection: a longer file is no note
// this package wrote, and is ignored as a damaged one is.
const maxNoteBytes = 1 << 20

// readStored reads the stored module at path whole. What is not a regular
// file (a named pipe, which would hold Open for ever) is refused, wrapping
// fsutil.ErrNotRegular; a file of more than max bytes is refused unread,
// wrapping fsutil.ErrTooLarge.
func readStored(path string, max int64) ([]byte, error) {
	f, fi, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, fmt.Errorf("%s holds %d bytes, more than %d: %w", path, fi.Size(), max, fsutil.ErrTooLarge)
	}
	return fsutil.ReadBounded(f, path, max)
}

// Close releases the runtime and the compiled modules. Activations still
// running are closed and waited for until ctx ends. An admission compiling
// a module is waited for as long as ctx lasts; when ctx ends first, Close
// answers its error and the runtime is released once that admission ends.
// Calls waiting to admit or compile a module answer ErrClosed at once.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.closing)
	for _, stop := range h.stops {
		stop()
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	// An admission or a fetch from the shared store compiles into the
	// runtime while it holds admitting: closing the runtime under it would
	// judge the module by a closed runtime, or crash the compiler. Close
	// takes admitting and never gives it back; those that follow see
	// closed.
	release := func(ctx context.Context) error { return errors.Join(h.rt.Close(ctx), h.cache.Close(ctx)) }
	select {
	case h.admitting <- struct{}{}:
		return release(ctx)
	default:
	}
	select {
	case h.admitting <- struct{}{}:
		return release(ctx)
	case <-ctx.Done():
		go func() {
			h.admitting <- struct{}{}
			_ = release(context.WithoutCancel(ctx))
		}()
		return fmt.Errorf("loophost: close: an admission is compiling; the runtime is released when it ends: %w", ctxError(ctx))
	}
}

// Compiles answers how many modules this host has compiled (at Open and
// admission); activations never compile.
func (h *Host) Compiles() int64 { return h.compiles.Load() }

// Activations answers how many instances this host has created.
func (h *Host) Activations() int64 { return h.activations.Load() }

// MaxModuleBytes answers the largest module Admit accepts.
func (h *Host) MaxModuleBytes() int64 { return h.opts.MaxModuleBytes }

// ValidID reports whether s is an AgentloopId: 64 lowercase hex digits.
func ValidID(s string) bool { return validID(s) }

// implementation is the part of an implementation descriptor the host
// reads.
type implementation struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Entrypoint string `json:"entrypoint"`
	ID         string `json:"id"`
}

// Resolve maps an agentloop implementation to the loop that runs it; it is
// session.Config.Loops. It compiles nothing but a module that must be
// compiled first (see Func), and it waits for that no longer than ctx
// lasts.
func (h *Host) Resolve(ctx context.Context, impl []byte) (agentloop.Func, error) {
	if string(impl) == brainapi.BuiltinDefaultImplementation {
		// The engine asks for the built-in loop in these bytes on every
		// turn of a session that names no loop.
		return h.builtinFunc(), nil
	}
	var d implementation
	if err := json.Unmarshal(impl, &d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	switch d.Type {
	case brainapi.ImplementationBuiltin:
		if d.Name != brainapi.BuiltinDefaultLoop && d.Name != "" {
			return nil, fmt.Errorf("%w: no built-in loop %q", ErrUnsupported, d.Name)
		}
		return h.builtinFunc(), nil
	case ImplementationComponent:
		if d.Entrypoint != agentloop.ExportTurn {
			return nil, fmt.Errorf("%w: entrypoint %q (want %q)", ErrUnsupported, d.Entrypoint, agentloop.ExportTurn)
		}
		return h.Func(ctx, d.ID)
	}
	return nil, fmt.Errorf("%w: type %q", ErrUnsupported, d.Type)
}

// builtinFunc answers the built-in loop: its Wasm build when the host has
// one, agentloop.Default otherwise.
func (h *Host) builtinFunc() agentloop.Func {
	if h.builtin != nil {
		return h.builtin.fn
	}
	return agentloop.Default
}

// ImplementationComponent is the implementation type of an admitted
// module: {"type":"brain_component","entrypoint":"turn","id":<sha256>}.
const ImplementationComponent = "brain_component"

// Func answers the loop of the admitted module id; a module admitted on
// another node of the cluster (Options.Shared), or one stored here that an
// earlier storage failure left uncompiled, is compiled first, after any
// admission under way. That wait ends when ctx ends, with ctx's error
// (wrapping its cause), or after lookupBound: a retryable overloaded
// session.TurnError wrapping ErrBusy. On a closed host it fails as an
// activation there does: a retryable overloaded session.TurnError
// wrapping ErrClosed. When the module cannot be stored or compiled for a
// storage failure (ErrStorage), or the cluster's store cannot be read, it
// fails as a Tool's run does for the same causes: a retryable overloaded
// session.TurnError wrapping the failure.
func (h *Host) Func(ctx context.Context, id string) (agentloop.Func, error) {
	ctx, cancel := withLookupBound(ctx)
	defer cancel()
	if err := h.locate(ctx, h.loops, id); err != nil {
		return nil, lookupFailure(ctx, kindLoop, id, err)
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, closedTurn(kindLoop, id, ErrClosed)
	}
	if m := h.loops.loaded[id]; m != nil {
		return m.fn, nil
	}
	if a, ok := h.loops.rejects[id]; ok && a.Error != nil {
		return nil, fmt.Errorf("%w: %s was rejected: %s", ErrNotAdmitted, id, a.Error.Message)
	}
	return nil, fmt.Errorf("%w: %s", ErrNotAdmitted, id)
}

func idOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// validID reports whether s is an AgentloopId: 64 lowercase hex digits.
func validID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
