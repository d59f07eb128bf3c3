// Package session is Brain's session engine. A session's whole life is its
// journal: the engine commits every lifecycle step, effect fence, transcript
// change, KV change and extension event as a journal record, and status,
// transcript, KV and public events are projections folded from it.
//
// # Effects
//
// Model calls, tool calls, tool cancels and environment operations commit a
// *_started record, are sent once, and are closed by *_ended or *_failed
// carrying sequence = the started record before the caller observes the
// answer. On the first open after a crash every started effect without a
// terminal record is closed as an ambiguous "interrupted" failure and nothing
// is resent.
//
// A commit that cannot be written (a full disk) leaves the session
// faulted: what it ended (an operation, a tool call, an activation, a
// turn) stays open in the journal. The session's next write, its next
// automatic activation or its reload closes each one as a reload does
// (failed, interrupted, ambiguous), and so does every read of a faulted
// session still in memory (Summary, List, Transcript, Events, Subscribe,
// a loop's events) before it answers: a read never shows what a reload
// would not, and while that close cannot be written either it answers
// ErrUnavailable. A session with subscribers has that close retried on
// a timer (CoalesceWindow, doubling up to a second, while the journal
// refuses it and someone subscribes; stopped by Delete and Close), so
// that a stream opened before the fault receives it once the journal
// takes records again, without waiting for another read. A tool's finish
// (also one sent during the synchronous phase, which is committed, not
// deferred) that cannot be recorded is answered the journal's error and
// closes the call (a dispatch waiting on the phase reads it finished
// with no outcome recorded); every later call of that
// execution (a finish sent again, an emit, a result, through Call or
// directly) is answered a conflict (ErrWrongState)
// saying so, once the call's close is durable (ErrUnavailable until
// then), its invocation token kept live for that until the session is
// deleted (at most maxUnrecorded such calls per engine; a restart
// revokes them all).
//
// Records no effect depends on (the terminal record of an in-process
// model call, the tool_call_ended of an execute's answer in the
// synchronous phase, the loop's transcript
// and KV changes) are folded at once and appended with the session's next
// append: every *_started fence, every answer to a caller (a turn's end,
// any service call through Services.Call) and every read flushes them
// first, and they are flushed at the latest CoalesceWindow later. A flush
// the store refused (a full disk) is tried again, waiting twice as long
// each time up to a second, until it succeeds or another append carries
// the records. While the store refuses them a session holds at most
// 16 MiB of them (maxHeldBytes): past it, a loop's KV write or
// transcript save appends them at once, and is answered ErrUnavailable
// wrapping the journal's error when the store refuses that too (nothing
// of it is done).
//
// A synchronous Send defers its start as well: turn_started and
// activation_started are appended with the turn's first commit (its first
// *_started fence, the flush before a remote loop's execute, or its end).
// When its context carries a commits.Ride (its HTTP idempotency claim
// rides the journal), the private claim record goes with them, and the
// private answer record, from Ride.Answer, commits with the turn's end,
// before activation_ended. A text turn is two appends, with a ride or
// without. If the commit carrying the start fails, nothing of the turn is
// durable and no effect was sent: the session is dropped from memory (it
// reloads from its journal) and Send answers the journal's write error.
// A refused append of records held from before the turn started carried
// nothing of it: the turn's end carries them, and the turn is answered
// as its end is.
//
// A Submit whose context carries a Ride (an async submission, answered
// with the turn_started sequence before the turn runs) commits its claim
// record and its answer record, Ride.Answer of that sequence, in the one
// append that makes turn_started and activation_started durable; the
// turn's end carries no answer. If that append fails, nothing of the
// submission is durable and Submit answers ErrUnavailable.
//
// # Activations
//
// One activation runs at a time per session. A turn (Submit, Send) records
// turn_started, activation_started ... activation_ended, turn_ended. Results
// of tools that returned without finishing wake the loop later through an
// event-triggered activation (activation_* only), coalesced for 5 ms,
// also while Close drains: the drain waits for that activation too.
// A turn whose result is larger than a journal record may be fails with
// agentloop_failed, as a loop that failed does (nothing was written of
// it; the store notes no fault).
// An activation that fails or is cancelled leaves the events it was handed
// pending and starts nothing itself (no automatic retry): the next
// activation, woken by a newer actionable record or started by a message,
// is handed them again (the rule is folded from the journal, so it holds
// after the session is passivated or the process restarts). A record
// that was pending when the failed activation started is no newer one,
// also when it was past the page of api.MaxPageEvents it was handed;
// once an activation ends, what it did not deliver wakes the loop. An
// activation one of whose events cannot be read from the journal fails
// (agentloop_failed, retryable) rather than ending as if its loop had
// been handed it.
// Engine.Interrupt records a private
// _session_interrupted (so does a restart that closed a turn or a tool
// call; one that closed only environment operations, such as a turn-end
// release, does not): from it
// until the next turn_started no activation starts without a message, also
// after the session is passivated or the process restarts.
// The loop and tools reach Brain through one service table (Services); the
// HTTP callback endpoint and the Wasm host expose the same table. An
// agentloop whose environment names an environment delivered over
// environment/v1 (driver "http" or a route) and whose implementation is not
// the built-in loop is remote: each activation is one execute on that
// environment carrying the TurnInput, the agentloop methods as a fresh
// callback grant and the turn's remaining time as deadline; its result
// receipt's output is the TurnOutput {result?}, and an accepted or
// progress receipt leaves the turn's outcome unknown. Create refuses as
// invalid a configuration of the built-in loop that the loop would refuse
// on every turn (agentloop.ParseConfiguration: a negative max_steps, say),
// naming the field; another loop's configuration is its own.
//
// Environment reports (Engine.Report) commit with environment origin; an
// actionable result (output_emitted) wakes the loop like a finished
// background tool, a diagnostic does not. Every environment operation also
// opens a controller context (Engine.Controller: environments, emit,
// result) with the same origin, bounded by the environment's own grants
// and closed when the operation returns or is cancelled.
//
// # Environments
//
// The engine talks to environments only through the Environments
// interface, whose one method Deliver sends every operation (package
// envbind delivers it over HTTP). Create sets every
// automatic environment up, End detaches after session_end_started, Delete
// tears down as separate journaled operations; a setup receipt with
// on_turn_end makes every turn end with a journaled environment_call of
// that method (after the answer is saved, waited for by Close and, once
// sent, by End before it detaches; deferred until every tool the turn
// started is closed, its cancel answered and its execute returned, and
// not sent once the session is ending). Tools on an
// environment that is not ready close with environment_not_ready without
// executing; a call pinned by environment_sequence to an incarnation that
// is not the environment's current one closes with
// environment_incarnation_stale and is sent nowhere. Dispatched inputs are checked against the tool's input_schema
// (invalid_input, nothing sent) and ok outputs against its output_schema
// (invalid_output), with the JSON Schema subset documented on Schema.
// Engine.Control and the environments service run environment control
// requests (list, get, create from a template, setup, update before the
// first setup, delete, call), the service bounded by the caller's
// EnvironmentGrants; instances are recorded as private
// _environment_created / _updated / _deleted records. A method declared
// with effect "replace" runs only while no activation or tool runs
// (conflict otherwise); an extension may not replace its own environment
// or the agentloop's bootstrap environment; a successful replace records
// _environment_replaced, whose sequence is the binding's new incarnation
// (old references and the old reporter stop working), in the append of
// the call's environment_call_ended. An operation whose terminal record
// cannot be written answers its caller the journal's error, not the
// receipt, and is closed as failed when the session reloads. A setup, detach or
// teardown whose outcome is unknown leaves the binding unknown with that
// operation pending (EnvironmentView.pending_operation), its template
// capacity still taken, until an actionable observation {scope:
// "operation", sequence, resolution} names the operation. An Environments
// error wrapping ErrInvalidReceipt makes the outcome unknown without
// recording environment_unreachable. A cancel answered with an unknown
// receipt closes as tool_cancel_failed, unknown and ambiguous, as one
// whose answer was lost does. The Services that Engine.Execution
// answers implement Closer, whose Done channel closes when the execution's
// authority is revoked (a tool's calls are refused with
// ErrExecutionClosed from the moment it is cancelled or its deadline
// passes); an Operation carries the same channels
// (CallbackDone, ContextDone) so a transport revokes its tokens then.
//
// # Live frames
//
// Subscriptions interleave live-only frames with committed events: for a
// model call that streams, model_request {model_call_sequence,
// input_bytes, media_inputs} with its first delta, model_output
// {model_call_sequence, index, delta} per delta (index numbering the
// call's deltas from 0), and model_usage {model_call_sequence, usage}
// when it returns. They are never journalled and are dropped for a
// subscriber that does not keep up; a gap in the indexes of a call's
// model_output frames says that deltas were dropped, and where.
//
// # Passivation
//
// Between turns a session holds no goroutine and no activation state
// unless an idle TTL keeps it; reads (Summary, Transcript, Events) never
// keep a session in memory. The engine keeps up to 64 goroutines that ran
// an activation or a tool delivery, for a second each, to run the next
// one with the stack they grew (see runners); they belong to no session.
// The projection of a released session (its folded state, no goroutine,
// no timer) may be kept in a cache bounded by
// Config.ReleasedBytes (64 MiB by default; past it, projections chosen at
// random go, so that sessions taking turns in a cycle longer than the
// bound holds still find a share of theirs kept), so that the
// next message reactivates it without reading the checkpoint or folding
// the journal tail; it is used only while the journal still ends where it
// does, and otherwise the session folds from the journal checkpoint and
// the records after it. The projection of a session a commit of which
// failed (faulted) is not kept: it may hold records the journal never
// took, and another node may have appended as many meanwhile. The bound is one per engine, not per session.
//
// A checkpoint's projection is taken only when the engine can go on from
// it (fromCheckpoint: it covers exactly the checkpoint's records, holds the
// configuration, names no environment without its state; maps it names
// null are empty); otherwise the whole journal is folded. A record whose
// frame checked out but which does not fold (a transcript_delta keeping a
// negative number of messages, say) makes the session damaged
// (journal.ErrDamaged) rather than loaded. FuzzFold and
// FuzzCheckpointProjection hold the fold to that for any record and any
// checkpoint payload.
//
// # A model call's request
//
// A model call's model_call_started holds its request without copying the
// conversation: "messages" counts its messages, "context" holds
// through_sequence and a delta (keep, append) over the saved transcript at
// that sequence, and "request", present only when the caller set any of
// them, holds the system prompt, tools, response_format, max_output_tokens
// and options as the caller set them (tools null when not set, so that an
// empty list stays one; response_format null when set to null, the
// format's reset). A field the caller left out came from the session's
// configuration at through_sequence for a loop's call, and was absent for
// a tool's call ("tool" names its tool_call_started). The request the
// model received is so rebuilt exactly from the journal
// (TestModelRequestRebuiltFromJournal).
//
// A request without messages (absent or null; an empty list is a
// request) is refused as invalid_request before anything is committed or
// sent, whoever makes it.
//
// A request the session's provider cannot carry (an option its dialect does
// not take, a response_format it has no form for) is refused as
// invalid_request before anything is committed or sent, and does not count
// as a model call (model.Prepare). The request is checked and encoded
// once, outside the session's lock, and the call sends the bytes checked.
// Create refuses, the same way, a provider that no client opens for, a key
// no request can carry and a session system prompt, tools or
// response_format the provider cannot carry.
//
// A model_call_failed holds the failure (code, message, retryable; a
// provider's failure has details {provider_code, retry_after_ms when the
// provider asked for a wait}) and, when the provider had begun to answer,
// "response" {stop_reason, usage, usage_complete}: the tokens counted
// before the stream broke off or the call was cancelled (usage_complete
// false), or the whole usage of a complete answer that could not be used
// (true). Brain never retries the call. The activation_failed and
// turn_failed of an activation its loop ended with an error hold the
// loop's error text, in which a service call's failure the loop returned
// reads as its message alone (the code is the record's own): a loop that
// returns a failed model call's error records what its model_call_failed
// says, and the API answers that message.
//
// A failure message in another party's words (a model provider's error,
// an environment's failure or unknown outcome, the error outcome of a
// tool, a loop's error) is recorded and answered with at most 4096 bytes,
// the bound of an ApiError's message: a longer one keeps its head, cut
// between characters, followed by " [message cut: N bytes in all]". It is
// recorded and answered as valid UTF-8: a character the message ends
// inside (a provider's error body read up to the model client's
// MaxErrorBytes) is left out, and any other byte that is not UTF-8 reads
// as U+FFFD, as the record's encoding has it.
//
// # Large messages
//
// A message of 1 KiB or more is journalled once per turn, by the first
// record that holds it (turn_started's input, a model_call_started's
// request delta, a model_call_ended's result). A later pure-append delta
// of the same turn or activation — the context of a model_call_started,
// or a private transcript_delta — that appends the same message writes a
// reference in "refs" instead: the position in the appended tail, the
// record's sequence and the path in it ("input",
// "context.delta.append.{i}" or "result.message"). The fold resolves
// references from the messages it saw, or reads the record from the
// journal when it started after it; a model_call_started is projected
// with its references resolved and re-encoded, so its public event holds
// the whole request delta exactly as a copy would. A delta that replaces
// a tail (public as transcript_replaced) always holds its messages. A
// 4 MiB message so takes about 4 MiB of segments, plus as much in the
// commit log until the next sync point.
//
// # A turn's cost and the session's length
//
// Nothing a turn does copies or compares the whole transcript: the loop
// gets the saved transcript with spare capacity (lend) and appends into
// it, a delta of an array that extends the saved one keeps the saved
// messages without comparing them, and the fold takes the messages the
// loop appended where they are (extend). While capacity is lent the
// fold writes none of it; other messages go to a new array. The live
// fold of a delta the engine has just built takes the delta as built
// instead of decoding its record, when its messages are what decoding
// would answer (canonicalMessages: valid UTF-8, raw JSON already compact
// and escaped as Marshal writes it); otherwise it decodes the record, as
// the fold of the journal does, so that the two folds agree value for
// value. Checkpoints
// are written at intervals that grow with what they cover, so their cost
// per record is flat too, and each encodes only the messages appended
// since the one before: the projection keeps the JSON of the transcript
// it encoded last (about the transcript's size again, counted in the
// released projection's size) and copies it; a delta that replaces
// messages it holds drops it.
package session
