// Package envapi holds the environment/v1 wire: the JSON that Brain POSTs to
// an environment provider at {url}/v1/operations, the receipts a provider
// answers with, the callback (service grant) bodies, the tool Outcome
// envelope, reporter observations and environment control requests.
//
// # The command
//
// Every operation arrives as one JSON object:
//
//	{"contract": "environment/v1",
//	 "operation": {"session_id": ID, "environment": ID, "sequence": N,
//	               "request": REQUEST,
//	               "binding": {"name": ID, "sequence": N}?,
//	               "configuration": ANY?, "template": ID?,
//	               "context": GRANT?, "reporter": GRANT?}}
//
// (session_id, environment, sequence) names the operation; sequence is the
// journal record that started it and is at least 1. An ID matches
// ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$.
//
// REQUEST is one of, discriminated by "type":
//
//	{"type":"setup", "configuration": ANY}
//	{"type":"execute", "implementation": ANY, "input": ANY, "deadline_ms": N?, "callback": GRANT?}
//	{"type":"call", "name": ID, "input": ANY}
//	{"type":"cancel", "target_sequence": N}
//	{"type":"detach"}
//	{"type":"teardown"}
//
// deadline_ms is the remaining time in milliseconds, not a timestamp; when it
// is absent the execution has no deadline. GRANT is {"url", "token", "methods"}.
//
// # The response
//
//	{"contract": "environment/v1", "sequence": N, "receipt": RECEIPT}
//
// with the sequence of the command and RECEIPT one of:
//
//	{"type":"accepted", "on_turn_end": ID?}
//	{"type":"progress", "data": ANY}
//	{"type":"result", "output": ANY}
//	{"type":"returned", "output": ANY?}
//	{"type":"failure", "code": ID, "message": STRING, "retryable": BOOL, "details": ANY?}
//	{"type":"unknown", "message": STRING}
//
// # Taking an answer
//
// Brain takes a 200 answer of at most MaxResponseBytes (its default
// bound) that DecodeResponse decodes and CheckResponse accepts: the
// sequence is the command's, no identifier of the receipt quotes the
// credential or a token the command carried (Operation.Tokens), and a
// setup, detach, teardown or cancel is answered accepted, failure or
// unknown. Any other 200 answer is an invalid receipt: the operation's
// outcome is unknown. ToolOutcome reads the receipt of a Tool's execute
// as Brain records the Tool's outcome, and ToolOutput the output of its
// result or returned receipt: an object with a top-level "status" is an
// Outcome envelope, a malformed one an error outcome invalid_output, and
// any other value the Tool's ok value. envtest.Post and Brain's delivery
// both check answers with these functions.
//
// # Strictness
//
// DecodeCommand, DecodeResponse and the other Decode functions reject a
// document that is not UTF-8 (encoding/json would pass its bytes on in raw
// values and replace them in strings), unknown fields, wrong JSON types,
// bad identifiers, sequences below 1 and missing required fields. Every such error is a *FieldError that names the field by
// its JSON path (for example "operation.request.target_sequence"), so a
// provider can answer 400 with a reason a person can act on.
package envapi
