package agentloop

import (
	"encoding/json"
	"fmt"
)

// Names of the Wasm agentloop ABI (documented byte for byte in the host's
// package doc): the host module a guest imports its services from, the
// guest exports the host calls, and the host function that hands a
// service answer to the guest.
const (
	// HostModule is the import module of every service function.
	HostModule = "brain"
	// HostAnswer copies the pending answer of the last service call into
	// guest memory: answer(ptr i32, len i32) -> i32 (bytes copied).
	HostAnswer = "answer"
	// ExportTurn runs one activation: turn(ptr i32, len i32) -> i64.
	ExportTurn = "turn"
	// ExportAlloc allocates guest memory for the turn input:
	// brain_alloc(size i32) -> i32.
	ExportAlloc = "brain_alloc"
)

// HostError is a service call the Wasm host refused or that failed: a
// loop built for Wasm receives it where a native loop receives the
// engine's error. Code is the API error code (not_granted, emit_limit,
// model_call_limit, ...). Ref identifies the host-side error: a loop that
// returns an error wrapping a HostError fails its activation with the
// original error, so the failure is recorded with the same code as for a
// native loop.
type HostError struct {
	Method    string          `json:"-"`
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Retryable bool            `json:"retryable,omitempty"`
	Details   json.RawMessage `json:"details,omitempty"`
	Ref       uint32          `json:"ref,omitempty"`
}

func (e *HostError) Error() string {
	return fmt.Sprintf("agentloop: %s: %s: %s", e.Method, e.Code, e.Message)
}

var exported Func

// Export makes f the loop a Wasm build of the calling program runs for
// every activation. Call it from an init function: a guest built with
// GOOS=wasip1 GOARCH=wasm -buildmode=c-shared runs package initialisation
// when it is instantiated and never runs main. Outside Wasm it only
// records f (see Exported), so the same program also builds and tests
// natively.
func Export(f Func) { exported = f }

// Exported answers the loop given to Export, or nil.
func Exported() Func { return exported }
