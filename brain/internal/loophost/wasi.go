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
	wasiErrnoNoSpc = 51
)

// budgetKey is the context key of the scratch budget of a tool
// invocation.
type budgetKey struct{}

// budgeted are the WASI functions that may extend a file or create a
// file or a directory: those a scratch budget may refuse.
var budgeted = []string{"fd_write", "fd_pwrite", "fd_filestat_set_size", "fd_allocate", "path_open", "path_create_directory"}

// instantiateWASI instantiates wazero's WASI preview 1 with the functions
// that may extend or create a file, or create a directory, answering
// ENOSPC when the invocation's scratch budget refused them: wazero's file
// system interface has no such error (it answers EIO for what it does not
// know), so a refusal is noted by the budget and the errno replaced here.
// The functions and their types are wazero's own.
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
		b.NewFunctionBuilder().
			WithGoModuleFunction(noSpace(fn), d.ParamTypes(), d.ResultTypes()).
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
