package loophost

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// WASI preview 1 errno values.
const (
	wasiErrnoIO    = 29
	wasiErrnoMFile = 33
	wasiErrnoNoSpc = 51
)

// budgetKey is the context key of the scratch budget of a tool
// invocation.
type budgetKey struct{}

// openFilesKey is the context key of the open files of a tool
// invocation.
type openFilesKey struct{}

// budgeted are the WASI functions that may extend a file or create a
// file or a directory: those a scratch budget may refuse.
var budgeted = []string{"fd_write", "fd_pwrite", "fd_filestat_set_size", "fd_allocate", "path_open", "path_create_directory"}

// instantiateWASI instantiates wazero's WASI preview 1 with the functions
// that may extend or create a file, or create a directory, answering
// ENOSPC when the invocation's scratch budget refused them, and with
// path_open answering EMFILE when the invocation holds maxOpenFiles open:
// wazero's file system interface has neither error (it answers EIO for
// what it does not know), so a refusal is noted by the budget or the
// count of open files and the errno replaced here. The functions and
// their types are wazero's own.
func instantiateWASI(ctx context.Context, rt wazero.Runtime) error {
	std := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(std)
	cm, err := std.Compile(ctx)
	if err != nil {
		return err
	}
	defer cm.Close(ctx)
	defs := cm.ExportedFunctions()
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	for _, name := range budgeted {
		d := defs[name]
		if d == nil {
			return fmt.Errorf("no function %s", name)
		}
		fn, ok := d.GoFunction().(api.GoModuleFunction)
		if !ok {
			return fmt.Errorf("function %s is not a Go module function", name)
		}
		wrapped := noSpace(fn)
		if name == "path_open" {
			wrapped = tooManyFiles(wrapped)
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(wrapped, d.ParamTypes(), d.ResultTypes()).
			WithParameterNames(d.ParamNames()...).
			WithResultNames(d.ResultNames()...).
			Export(name)
	}
	_, err = b.Instantiate(ctx)
	return err
}

// noSpace answers ENOSPC instead of EIO from fn when the scratch budget
// of the invocation refused the call.
func noSpace(fn api.GoModuleFunction) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		b, _ := ctx.Value(budgetKey{}).(*budget)
		if b == nil {
			fn.Call(ctx, mod, stack)
			return
		}
		b.takeRefused()
		fn.Call(ctx, mod, stack)
		if b.takeRefused() && stack[0] == wasiErrnoIO {
			stack[0] = wasiErrnoNoSpc
		}
	}
}

// tooManyFiles answers EMFILE instead of EIO from fn when the invocation
// holds maxOpenFiles open.
func tooManyFiles(fn api.GoModuleFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		o, _ := ctx.Value(openFilesKey{}).(*openFiles)
		if o == nil {
			fn(ctx, mod, stack)
			return
		}
		o.takeRefused()
		fn(ctx, mod, stack)
		if o.takeRefused() && stack[0] == wasiErrnoIO {
			stack[0] = wasiErrnoMFile
		}
	}
}
