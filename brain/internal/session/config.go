package session

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/brain/internal/telemetry"
)

// Limits bound a turn. Zero means no bound.
type Limits struct {
	// MaxModelCalls bounds model calls per turn (model_call_limit).
	MaxModelCalls int
	// MaxTurn bounds a turn's wall time; expiry cancels it.
	MaxTurn time.Duration
	// MaxTool is the deadline handed to every tool call (timeout).
	MaxTool time.Duration
	// MaxEmittedBytes bounds extension event bytes per turn (emit_limit):
	// the serialized kinds and payloads of its events and tool results.
	MaxEmittedBytes int64
}

// DefaultLimits are the limits the server ships.
func DefaultLimits() Limits {
	return Limits{MaxModelCalls: 128, MaxTurn: 1800 * time.Second, MaxTool: 120 * time.Second, MaxEmittedBytes: 1 << 20}
}

// KeepIdle as Config.IdleTTL keeps idle sessions in memory indefinitely.
const KeepIdle time.Duration = -1

// CoalesceWindow is how long event-triggered wake-ups are gathered from the
// first pending commit.
const CoalesceWindow = 5 * time.Millisecond

// Config configures an Engine.
type Config struct {
	// Store is the journal. Required.
	Store journal.Store
	// Models opens model clients; nil selects model.Default() (scripted).
	Models model.Opener
	// Environments delivers environment/v1 operations; nil means sessions
	// may not declare environments.
	Environments Environments
	// Secrets keeps model keys and environment credentials; nil selects an
	// in-memory store.
	Secrets Secrets
	// Loops resolves an agentloop implementation; nil runs only the
	// built-in default loop. ctx is the create's or the activation's: a
	// resolution that waits (for a module to be compiled, say) ends when
	// the activation is cancelled or its deadline passes.
	Loops func(ctx context.Context, implementation []byte) (agentloop.Func, error)
	// Limits bound every turn; the zero value bounds nothing.
	Limits Limits
	// IdleTTL is how long an idle session stays in memory after create and
	// after each turn: 0 releases it at once (the default), KeepIdle keeps
	// it. A session's idle_ttl_ms overrides it (0 there means keep).
	IdleTTL time.Duration
	// CheckpointEvery writes the projection checkpoint when a session is
	// released after at least this many records since the last one
	// (0 selects 256; negative disables checkpoints).
	CheckpointEvery int
	// ReleasedBytes bounds the projections of released sessions kept for
	// their next activation, by an estimate of their heap bytes (0 selects
	// DefaultReleasedBytes; negative keeps none). A session whose
	// projection is kept reactivates without reading its checkpoint or
	// folding its journal tail.
	ReleasedBytes int64
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Ownership, when set (a cluster's database backend), must grant this
	// node the session's lease before anything of it runs or is
	// committed here; reads of a session not active here are folded from
	// the journal without recovering it.
	Ownership Ownership
	// Tracer, when set, starts the spans of turns, activations, model
	// calls and tool calls (see trace.go); nil traces nothing.
	Tracer trace.Tracer
	// Telemetry takes the records of the telemetry service (nil: they are
	// checked and dropped). It is never journalled.
	Telemetry *telemetry.Pipeline
	// CancelDelivery bounds the delivery of a cancel operation to an
	// executor (0 selects 10 s); past it the cancel is recorded failed,
	// with an unknown outcome, and never resent.
	CancelDelivery time.Duration
}
