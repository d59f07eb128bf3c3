// Package envsdk is for writing environment/v1 providers: the HTTP services
// that run Tools and Agentloops for Brain and manage the resources they use.
//
// # Writing a provider
//
// Implement Provider (embed Base for the operations you do not need) and
// serve it; about twenty lines are enough:
//
//	type sandbox struct{ envsdk.Base }
//
//	func (s *sandbox) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
//		var in struct{ Text string `json:"text"` }
//		if err := json.Unmarshal(x.Input, &in); err != nil {
//			return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, err.Error())
//		}
//		return envsdk.Output(map[string]string{"echo": in.Text})
//	}
//
//	h := envsdk.NewHandler(&sandbox{}, &envsdk.Options{Token: token})
//	err := envsdk.ListenAndServe(ctx, "127.0.0.1:8090", h)
//
// That is a whole provider: with one Execute it passes every conformance
// case that applies to it, because the handler also tracks bindings
// itself. A second setup of a binding that is set up answers the failure
// already_exists, and an execute or call on a binding torn down through
// this handler answers unavailable; neither reaches the provider. A
// teardown is always passed on (it is repeatable). The record is in
// memory, so after a restart every operation reaches the provider again.
// A provider that tracks bindings itself (to accept a duplicate setup, or
// to keep bindings across restarts) sets Options.UntrackedBindings.
// A setup whose SetupResult.OnTurnEnd is not an identifier, or names no
// method of the provider's Methods, is answered with the failure
// invalid_output and leaves no binding: the handler calls
// Teardown for it (a failed teardown is kept in details.cleanup_error), so
// that the next setup runs.
//
// The handler authenticates the bearer token in constant time before
// looking at the route (401), serves only POST /v1/operations (404, 405),
// bounds the body (413, 16 MiB by default), decodes the command strictly
// (400 naming the field) and calls the provider. Unknown request types,
// undeclared methods and Base's Execute answer the failure "unsupported".
//
// # Operations and their context
//
// Every operation gets a *Ctx. Ctx.Context ends when the operation returns,
// when an execute's deadline_ms passes, or when Brain cancels the execute
// with a cancel request for its sequence; context.Cause tells which
// (ErrDeadline, ErrCancelled). Ctx
// also decodes the binding's configuration into the provider's options
// type (DecodeConfiguration: strict JSON plus validator tags, failing with
// invalid_configuration), calls the operation's controller services
// (Environments, Emit, EmitResult) and hands out the binding's Reporter,
// which may be kept after the operation returns. Those controller services
// close when the operation returns or is stopped (cancelled, past its
// deadline): after that they fail with ErrClosed and send nothing.
// A Ctx, a Reporter, an Invocation, and envapi's Command, Operation,
// Request and Grant (its value, or a pointer to it, nil included),
// printed or logged with log/slog (its JSON handler too), never show the
// tokens of the grants they hold.
//
// # How Execute is answered
//
//   - A result receipt (Output or envapi.Result) is the Tool's output. When
//     the callback grant lists finish and the provider has not finished the
//     invocation itself, the handler calls finish once with {status:"ok",
//     value: output}. If that acknowledgement is lost (no answer, a 5xx
//     answer) the receipt becomes unknown: the outcome may have been
//     committed, and it is never sent again. If Brain refuses it (a 4xx
//     answer) nothing was committed: the receipt is a failure with Brain's
//     code and its status, code and message in details, or cancelled (or
//     timeout) when Brain cancelled the Tool (or its deadline passed)
//     while the finish was on the way. A refused finish is not sent again
//     either. A finish that never reached Brain (every connection to the
//     callback URL was refused) committed nothing either: the receipt is
//     the failure environment_failed (or cancelled, or timeout, as for a
//     refusal), never unknown, and nothing is sent again.
//     A provider that calls Finish itself while Execute answers
//     the result has its own finish stand: the handler sends none and
//     answers the result.
//   - To complete later, return envapi.Returned(nil) and do the rest of
//     the work under x.Context(), calling x.Invocation.Finish when done
//     (with x.Context(), or a context of your own bounded by x.Deadline;
//     not one derived from c.Context(), which ends when Execute returns).
//     x.Context() lives on after the answer and ends when Brain cancels
//     the Tool (context.Cause is ErrCancelled), when its deadline passes
//     (ErrDeadline), when its binding is detached or torn down, when
//     Serve returns, or once its Finish was answered. Brain closes a cancelled Tool as cancelled and one past
//     its deadline as timeout itself, and the callback is no longer
//     valid: from then on every Invocation method, Finish among them,
//     fails with ErrClosed (and the cause) and sends nothing, so no
//     outcome of the work reaches Brain after the cancel was answered.
//     A provider that implements Canceler has Cancel called as well.
//     Serve's graceful stop waits for such a Tool until its Finish was
//     answered or x.Context() ended, within its grace; x.Context() of
//     every Tool still going then ends as Serve returns.
//   - An *Error is answered as a failure with its code, message, retryable
//     flag and details. An error wrapping ErrUnknown is answered unknown,
//     and so is one wrapping ErrAckLost (the error of the provider's own
//     Finish whose acknowledgement was lost: the outcome may have been
//     committed), and the *CallError of a service call Brain answered
//     with the code ambiguous (or unknown), which may have taken effect.
//     This holds for every operation, a call's method too.
//   - When the deadline passed the answer is the failure timeout; when Brain
//     cancelled, cancelled. A provider failure (an *Error or a failure
//     receipt) whose code is timeout or cancelled is kept as it is, so a
//     provider that adds cleanup evidence with KeepFirst keeps it; any
//     other failure answered after the stop is kept as evidence in
//     details ({"error", "code", "details"}). A result (or any receipt but
//     a failure or unknown) that Execute answers after the stop is not the
//     answer and is never finished: the stop is. If Execute does not
//     return within Options.StopGrace of the stop, the handler answers
//     without it.
//   - Any other error, or a panic, is the failure environment_failed; the
//     server keeps serving.
//   - A receipt that does not encode as one Brain decodes (an output that is
//     not JSON, a failure code that is not an identifier) is answered as the
//     failure invalid_output, and is never finished. The message of a
//     failure or unknown receipt longer than envapi.MaxMessageLen is cut
//     to it, as Finish cuts an outcome's, never refused.
//   - An answer larger than Brain takes (Options.MaxAnswerBytes, by
//     default envapi.MaxResponseBytes, Brain's own default; of any
//     operation: a result, a method's output, a failure's details), which
//     Brain would record as an invalid receipt, its outcome unknown, is
//     answered as the failure output_limit instead (details: receipt,
//     code, answer_bytes, limit_bytes); such a result is never finished.
//   - An execute whose (session, environment, sequence) was already
//     dispatched to this handler is answered unknown and not run again,
//     whether the first is still running or answered long ago. The same
//     holds for a call (its method does not run again) and for a setup
//     (Setup does not run again, even once its binding was torn down):
//     each operation is identified by its sequence, and Brain sends each
//     once, so a repeat is a copy the network made, never a new request.
//     Only what left nothing behind may run again at its sequence: a
//     setup that failed (no binding is left of it), and a call of a
//     method the provider does not have (answered unsupported again). A
//     detach or teardown is repeatable and always passed on. The record
//     of dispatched sequences is in memory and bounded (the latest 65,536
//     operations): after a restart, or that far behind, a repeat reaches
//     the provider again.
//   - An execute whose deadline_ms is 0 (its time ran out on the way)
//     answers timeout without running.
//   - A cancel that overtakes its execute (Brain sends each once, and two
//     requests may arrive in either order) is kept: the execute, when it
//     comes, answers cancelled without running, and so does a repeat of
//     it. Brain cancels only executes; a call or setup that comes at a
//     sequence a cancel named first is treated alike (cancelled, not
//     run). A cancel of an execute that already completed (answered, or
//     finished after returned), or of a call, is accepted and changes
//     nothing. A cancel is an operation of its own, identified by its
//     sequence as the others are: a repeat of it at that sequence
//     answers unknown and does not call the provider's Cancel again.
//
// # Callbacks
//
// x.Invocation is the client of the execute's callback grant: Emit, Result,
// Returned, Finish, Model, Telemetry and Environments for Tools; Events,
// Dispatch, SetTranscript and KVRead/KVPut/KVDelete for Agentloops. A method
// the grant does not list fails with ErrNotGranted and sends nothing. A grant
// call is repeated only when the connection was refused before anything was
// sent; any other failure is returned as is. A call whose every connection
// was refused (or whose context ended between such attempts, or, with
// net/http's own transport, while its connection was being opened) never
// reached Brain: its error matches ErrNotSent, a definite failure, never a lost
// acknowledgement. Nothing of it was committed, and the provider may make
// the call again; a Finish that fails so was not attempted, so Finish stays
// available. Result, Returned and Finish refuse an outcome Brain would
// refuse (a status that is not one of the five, an error outcome whose
// code is not an identifier) before anything is sent, and Finish then
// stays available too. They send an outcome's messages cut to
// envapi.MaxMessageLen bytes, as an execute's failure or unknown receipt
// is answered with its message cut: a long message is never refused.
// A call whose body Brain refuses for its size (413,
// envapi.MaxCallBytes unless Brain's operator set another) fails with an
// error matching ErrTooLarge and ErrRefused; a Finish refused so stays
// available for a smaller outcome. An answer that is not what the method answers (not one UTF-8 JSON value, a committed sequence that
// is not a positive JSON integer, a kv_read answer that is not an object,
// a dispatch answer that is not one ToolReturn per call in call order) is
// an error matching ErrMalformedAnswer, never a value read from it; for
// Finish it also wraps ErrAckLost. A non-2xx answer is a *CallError, its
// code and message cut to envapi.MaxMessageLen. A 4xx answer is Brain's
// refusal and matches ErrRefused: nothing of the call was committed. A
// 5xx answer does not: the call may have been committed before Brain
// failed to answer (for Finish it wraps ErrAckLost, as a lost answer
// does).
//
// # Tracing
//
// When Brain traces (OTLP configured), each operation it sends carries
// the W3C trace context of its span (traceparent, tracestate); the handler
// puts it into c.Context(), so spans a provider starts from that context
// with the OpenTelemetry API (otel.Tracer(...).Start(c.Context(), ...))
// join Brain's trace, exported by whatever TracerProvider the provider
// installs. Invocation and Reporter calls made with such a context send it
// back, so Brain's spans of them join too. envsdk itself uses only the
// OpenTelemetry API and propagation packages, never an SDK; without a trace
// context nothing changes.
//
// # Helpers
//
// Lazy allocates a binding's resource on first use, shares one allocation
// among concurrent first callers and keeps a failure sticky until Reset.
// BindingKey names a binding. KeepFirst keeps the first stop cause while
// recording cleanup failures in details.
//
// Package envsdk/toolset defines the standard tool set the reference
// providers implement (command, read, write, list, edit): descriptors,
// strict input decoding, the edit rule and output capping, for any provider
// that wants the same tools.
package envsdk
