// Package envtest is the test kit of environment/v1: a fake Brain for
// provider authors and a recording provider for Brain's tests.
//
// NewBrain starts an HTTP server on loopback that implements the Brain side
// a provider talks to:
//
//   - the execution callback, POST /v1/sessions/{sid}/executions/{seq}/call
//     with body {"method", "input"} and the grant's bearer token. emit,
//     result, returned, finish, set_transcript, kv_put and kv_delete answer
//     a committed sequence as a bare JSON integer; an event type Brain
//     reserves (a leading underscore, a record kind, an API error or
//     failure code) is refused with 422 {"code":"reserved_name"}; result,
//     returned and finish take an Outcome as Brain decodes it (a status of
//     the five, an error with an identifier code, no unknown field);
//     model takes a ModelRequest with messages; set_transcript takes
//     messages of role user, assistant or developer; dispatch takes tool
//     invocations whose call_ids are neither empty nor repeated;
//     telemetry answers null;
//     kv_read answers {} for absence or {"value": V}; events answers
//     {"events": [], "next_cursor": N}; model, dispatch and environments
//     answer configurable results (see Handle). A method the grant does not
//     list is refused with 403 {"code":"not_granted"}; a missing, wrong,
//     expired or revoked token with 401 {"code":"unauthorized"}. finish
//     closes the grant, so any later call is a 401.
//   - the reporter, POST /v1/sessions/{sid}/environments/{env}/{bseq}/events,
//     which validates the body with envapi.DecodeReporterEvent and answers
//     {"sequence": N}, refuses a reserved event type as emit does, and
//     answers 404 {"code":"not_found"} once its binding was released
//     (see Post);
//   - an operation's controller context,
//     POST /v1/sessions/{sid}/environments/{env}/operations/{seq}/context,
//     with the methods environments, emit and result (which takes an
//     observation {observation, content?}, as on the reporter). Post
//     closes it when the operation returns, and a cancel closes the
//     context of the execute it names, as Brain does.
//
// As Brain does too, Post revokes the execution callback of the execute a
// cancel names before it sends the cancel, and the callback of an execute
// with deadline_ms expires at that deadline (counted from when Post sends
// the execute); later calls with it answer 401. A detach answered
// (accepted or failure) or a teardown accepted closes the binding's
// reporter: later reports answer 404 not_found, as Brain answers for a
// binding it recorded detached or deleted.
//
// Every request is recorded, in arrival order, as a Call (see Calls,
// CallsFor and WaitFor), rejected ones included. Faults can be injected per
// method with Inject: a lost acknowledgement (the call is processed, then the
// connection is closed without an answer, at once or after a hold), a 5xx, a
// slow reply or a revoked token.
//
// Commands builds environment/v1 commands with increasing sequences, and
// Post sends one to a provider's {url}/v1/operations and takes the answer
// as Brain's delivery takes it (envapi.MaxResponseBytes,
// envapi.DecodeResponse, envapi.CheckResponse): a 200 answer Brain records
// as an invalid receipt is an error wrapping ErrInvalidResponse.
// envapi.ToolOutcome reads an execute's receipt as Brain records the
// Tool's outcome:
//
//	b := envtest.NewBrain(t)
//	cmds := envtest.NewCommands("s1", "workspace")
//	cmds.Brain = b // execute commands carry a fresh tool grant
//	status, body, resp, err := envtest.Post(ctx, nil, providerURL, token, cmds.Setup(nil))
//
// NewProvider serves any environment/v1 handler (usually an envsdk
// provider's) on loopback and records every operation it receives
// (Received, WaitFor), with named gates its behaviours wait on (Gate,
// Open, Hold), injected failures (FailNext, ShouldFail) and a restartable
// listener (Down, Up, NewProviderAt) for unreachable-provider cases.
// Buffer collects a server's logs safely across goroutines.
package envtest
