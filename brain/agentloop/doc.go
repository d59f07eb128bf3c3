// Package agentloop is Brain's built-in default agentloop, the Go
// interface it is written against, and the guest SDK for loops built to
// WebAssembly. The interface mirrors the agentloop service names of the
// callback API (model, dispatch, emit, telemetry, events, set_transcript,
// kv_read, kv_put, kv_delete, environments), so the same loop runs natively
// inside the engine or as a guest module.
//
// A Go guest registers its loop from an init function and is built as a
// WASI reactor:
//
//	func init() { agentloop.Export(myLoop) }
//	func main() {}
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o loop.wasm .
//
// Built that way (files tagged wasip1) the package exports turn and
// brain_alloc and reaches the host's services through the imports of the
// host module "brain"; a service the host refuses answers a *HostError
// with the API error code. The ABI is specified in the host's package doc
// (brain/internal/loophost). The package depends on the standard library
// and the stdlib-only brain/api wire types.
package agentloop
