package loophost

import (
	"context"
	"fmt"
	"slices"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/brain-in-go/brain/brain/agentloop"
	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/tool"
)

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// compile compiles and validates b, the module id. It is the only place
// that compiles.
func (h *Host) compile(ctx context.Context, k kind, id string, b []byte) (*module, error) {
	h.compiles.Add(1)
	if err := checkFormat(b); err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	if err := checkCounts(b); err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	// The module is compiled with its data segments merged and the
	// maxima of its tables bounded (tables.go); its id and the bytes kept
	// are the module as given.
	prepared, _ := coalesceData(b)
	prepared, _ = boundTables(prepared)
	if err := checkSegments(prepared); err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	cm, err := h.rt.CompileModule(ctx, prepared)
	if damagedCacheError(err) {
		// A damaged cache entry is no judgement of the module: it is
		// discarded and the module compiled anew.
		if derr := h.discardCache(); derr != nil {
			return nil, fmt.Errorf("compilation cache: %w: %w", ErrStorage, derr)
		}
		cm, err = h.rt.CompileModule(ctx, prepared)
	}
	if err != nil && (storageError(err) || damagedCacheError(err)) {
		return nil, fmt.Errorf("compilation cache: %w: %w", ErrStorage, err)
	}
	if err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	if err := h.validate(k, cm); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	if err := importsFunctionsOnly(b); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	if err := dataWithinMemory(b); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	if err := elementsWithinTables(b); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	m := &module{id: id, kind: k, cm: cm}
	if k == kindTool {
		return m, nil
	}
	m.fn = func(ctx context.Context, svc agentloop.Services, in brainapi.TurnInput) (brainapi.TurnOutput, error) {
		return h.run(ctx, m, svc, in)
	}
	return m, nil
}

// validate checks the exports and imports of the ABI (see the package
// doc), so that a module that cannot run is rejected at admission.
func (h *Host) validate(k kind, cm interface {
	ExportedFunctions() map[string]api.FunctionDefinition
	ExportedMemories() map[string]api.MemoryDefinition
	ImportedFunctions() []api.FunctionDefinition
	ImportedMemories() []api.MemoryDefinition
}) error {
	exports := cm.ExportedFunctions()
	want := func(name string, params, results []api.ValueType) error {
		f, ok := exports[name]
		if !ok {
			return fmt.Errorf("the module exports no function %q", name)
		}
		if !slices.Equal(f.ParamTypes(), params) || !slices.Equal(f.ResultTypes(), results) {
			return fmt.Errorf("export %q has type %s, want %s", name, signature(f.ParamTypes(), f.ResultTypes()), signature(params, results))
		}
		return nil
	}
	_, hasStart := exports["_start"]
	_, hasInit := exports["_initialize"]
	if hasStart && !hasInit {
		return fmt.Errorf("the module is a WASI command (it exports _start); build a reactor that exports _initialize (Go: -buildmode=c-shared)")
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("the module exports no memory named %q", "memory")
	}
	if hasInit {
		if err := want("_initialize", nil, nil); err != nil {
			return err
		}
	}
	entry, other := agentloop.ExportTurn, tool.ExportRun
	if k == kindTool {
		entry, other = other, entry
	}
	if err := want(entry, []api.ValueType{i32, i32}, []api.ValueType{i64}); err != nil {
		if _, ok := exports[other]; ok {
			if k == kindTool {
				return fmt.Errorf("the module exports %q, not %q: it is an agentloop module (admit it with POST /v1/agentloops)", other, entry)
			}
			return fmt.Errorf("the module exports %q, not %q: it is a Tool module (admit it with POST /v1/tools)", other, entry)
		}
		return err
	}
	if err := want(agentloop.ExportAlloc, []api.ValueType{i32}, []api.ValueType{i32}); err != nil {
		return err
	}
	if len(cm.ImportedMemories()) > 0 {
		return fmt.Errorf("the module imports a memory; it must define its own")
	}
	wasi := h.wasi.ExportedFunctionDefinitions()
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		var params, results []api.ValueType
		switch mod {
		case agentloop.HostModule:
			s, ok := hostSignatures[name]
			if ok && !k.imports(name) {
				return fmt.Errorf("the module imports %s.%s, which the host provides to %ss only", mod, name, kind(1-k))
			}
			if !ok {
				return fmt.Errorf("the module imports %s.%s, which the host does not provide", mod, name)
			}
			params, results = s[0], s[1]
		case wasi_snapshot_preview1.ModuleName:
			d, ok := wasi[name]
			if !ok {
				return fmt.Errorf("the module imports %s.%s, which the host does not provide", mod, name)
			}
			params, results = d.ParamTypes(), d.ResultTypes()
		default:
			return fmt.Errorf("the module imports %s.%s; only %q and %q are provided", mod, name, agentloop.HostModule, wasi_snapshot_preview1.ModuleName)
		}
		if !slices.Equal(f.ParamTypes(), params) || !slices.Equal(f.ResultTypes(), results) {
			return fmt.Errorf("import %s.%s has type %s, want %s", mod, name, signature(f.ParamTypes(), f.ResultTypes()), signature(params, results))
		}
	}
	return nil
}

// importKinds names the kinds of import other than a function.
var importKinds = map[byte]string{0x01: "table", 0x02: "memory", 0x03: "global", 0x04: "tag"}

// importsFunctionsOnly refuses a module that imports a table, a global or
// a tag: the host modules export functions only, so such a module
// compiles but no instance of it can be created. b has compiled, so its
// import section is well formed.
func importsFunctionsOnly(b []byte) error {
	secs, _ := sections(b)
	for _, sec := range secs {
		if sec.id != 2 {
			continue
		}
		r := &reader{b: b[sec.body:sec.end]}
		n, ok := r.u32()
		for i := uint32(0); ok && i < n; i++ {
			var mod, name string
			if mod, ok = r.name(); !ok {
				break
			}
			if name, ok = r.name(); !ok {
				break
			}
			var kind byte
			if kind, ok = r.byte(); !ok {
				break
			}
			if kind != 0x00 {
				what := importKinds[kind]
				if what == "" {
					what = fmt.Sprintf("an import of kind %#x", kind)
				}
				return fmt.Errorf("the module imports the %s %s.%s; the host provides functions only", what, mod, name)
			}
			ok = r.skipU32()
		}
	}
	return nil
}

// dataWithinMemory refuses a module with an active data segment, at a
// constant offset, that does not lie within the initial size of its
// memory: such a module compiles, but creating an instance of it fails.
// b has compiled, so its memory and data sections are well formed; a
// segment whose offset is not a lone i32.const is left to the runtime.
func dataWithinMemory(b []byte) error {
	secs, _ := sections(b)
	size := uint64(0)
	for _, sec := range secs {
		r := &reader{b: b[sec.body:sec.end]}
		switch sec.id {
		case sectionMemory:
			if n, ok := r.u32(); !ok || n != 1 {
				return nil
			}
			if _, ok := r.byte(); !ok { // flags
				return nil
			}
			pages, ok := r.u32()
			if !ok {
				return nil
			}
			size = uint64(pages) * wasmPage
		case sectionData:
			n, ok := r.u32()
			for i := uint32(0); ok && i < n; i++ {
				var flags uint32
				if flags, ok = r.u32(); !ok || flags > 2 {
					return nil
				}
				if flags == 2 && !r.skipU32() { // memory 0, the only one
					return nil
				}
				off, constant := uint32(0), false
				if flags != 1 { // active
					start := r.at
					if !r.constExpr() {
						return nil
					}
					off, constant = i32Const(r.b[start:r.at])
				}
				var length uint32
				if length, ok = r.u32(); !ok || uint64(length) > uint64(r.left()) {
					return nil
				}
				r.at += int(length)
				if constant && uint64(off)+uint64(length) > size {
					return fmt.Errorf("data segment %d writes %d bytes at offset %d, outside the initial memory of %d bytes: no instance of the module can be created", i, length, off, size)
				}
			}
			return nil
		}
	}
	return nil
}

// i32Const answers the value, as an unsigned offset, of a constant
// expression that is a lone i32.const; ok is false for any other.
func i32Const(expr []byte) (v uint32, ok bool) {
	if len(expr) < 3 || expr[0] != opI32Const || expr[len(expr)-1] != opEnd {
		return 0, false
	}
	x, n := sleb32(expr[1:])
	if n != len(expr)-2 {
		return 0, false
	}
	return uint32(x), true
}

func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := "("
		for i, t := range ts {
			if i > 0 {
				s += ", "
			}
			s += api.ValueTypeName(t)
		}
		return s + ")"
	}
	return names(params) + " -> " + names(results)
}
