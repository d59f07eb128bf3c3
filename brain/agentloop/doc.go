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
// with the API error code. An error the loop returns fails its activation
// with the first 4096 bytes of its message, and with the code of the
// *HostError it wraps, if any. The ABI is specified in the host's package doc
// (brain/internal/loophost). The package depends on the standard library
// and the stdlib-only brain/api wire types.
//
// # Determinism
//
// What a loop decides is replayable from its session's journal, so a Wasm
// loop sees no real time and no unpredictable randomness: its random
// source (crypto/rand, and the runtime's seed of math/rand) is a stream
// drawn from its activation's in.Runtime.DeterministicSeed (32 bytes,
// different for every activation), the clock is not the real time: it
// reads 2022-01-01T00:00:00Z when an activation starts and moves on by a
// millisecond each time it is read (the Go runtime reads it too), the
// same in every run, and time.Sleep returns at once. The time a loop acts on is in.Runtime.LogicalTimeMs, when its
// activation started. Everything else it learns (model answers, tool
// returns, events, KV) comes through Services and is journalled. Each
// activation runs in a fresh instance: package variables do not survive
// from one turn to the next; save state with SetTranscript and KVPut.
//
// In Wasm, the ctx a loop is given is never cancelled: when the turn is
// interrupted or its wall time ends the host stops the instance, and a
// service called after the cancel answers a *HostError with code
// cancelled or timeout. A service called under a ctx the loop derived and
// ended (cancelled, or past its deadline) is refused in the guest,
// without reaching the host, with an error wrapping ctx's error and its
// cause; a call made runs in the host until it answers. A loop run
// natively gets the engine's context.
package agentloop
