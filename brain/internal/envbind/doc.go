// Package envbind binds Brain's session engine to environment/v1 providers
// over HTTP. A Binder is the engine's session.Environments: Deliver POSTs
// each committed operation once, whatever its type, to
// {endpoint}/v1/operations and decodes the receipt strictly. It also mints
// and checks the tokens providers and extensions present when they call
// back (Authorize, Revoke, AuthorizeReporter); package httpapi serves
// those routes:
//
//	POST /v1/sessions/{id}/executions/{sequence}/call           invocation token
//	POST /v1/sessions/{id}/environments/{env}/{sequence}/events reporter token
//
// # Where an operation goes
//
// A declaration with driver "http" names its provider by url and may carry
// its own credential (kept in the engine's Secrets, never journaled); such
// a session URL never receives a Brain credential. Any other driver name
// is a route: Config.Routes (usually loaded from
// BRAIN_ENVIRONMENT_ROUTES_FILE, a JSON object {"<driver>": {"endpoint",
// "api_key"?}}) maps it, or the string field "driver" of the
// configuration, to an endpoint and the operator's key. Only the
// declaration as the session's creator made it selects the route and the
// credential (session.Operation.Authorized; for an instance, its
// template's): a configuration given later, to a control create or
// update, cannot name another route. Endpoints must be
// HTTPS or loopback HTTP. When no route matches, Config.BaseURL and
// Config.APIKey (BRAIN_ENVIRONMENT_BASE_URL, BRAIN_ENVIRONMENT_API_KEY) are
// the default route. The credential is sent as "Authorization: Bearer".
// What the provider answers (a receipt's message, details, data and
// output, or a delivery error) is journaled, so the credential and the
// tokens the operation carried, the reporter tokens of the session's
// other current bindings (session.Operation.Bindings), the credentials
// the operations of the session's other environments carry (their
// session credentials and route keys, session.Operation.Targets) and the
// tokens of the session's other operations still under way when it
// answers (an execute running, a controller context) are
// replaced by "[redacted]" wherever the answer quotes them (also as Go
// quotes them in an error, and without the spaces or tabs a credential
// was given with around it, which no header carries). An answer that
// quotes one where it cannot be replaced, in an
// identifier (a failure's code, on_turn_end), is an invalid receipt, and
// a malformed answer that quotes one is not described in the delivery
// error.
//
// # Delivery
//
// Each operation is one POST of {"contract":"environment/v1","operation":
// {session_id, environment, sequence, request, binding, configuration,
// template?, reporter, ...}} carrying the started record's sequence. It is
// never retried, not even by the HTTP transport on a stale keep-alive
// connection. An operation Brain cannot send is answered by Deliver as a
// failure receipt, since it certainly reached no provider: no_route when
// its environment has no route any more (a route left the configuration
// across a restart; not retryable), not_sent when Brain's public URL is
// not known yet or the server key cannot be read (retryable). The answer
// must be 200 with {"contract", "sequence",
// "receipt"} echoing the contract and the sequence. A connection failure,
// timeout or non-200 status (whatever its body) is an error the engine
// records as an unknown outcome plus environment_unreachable; a provider
// that answered 200 with an undecodable or oversized body wraps
// session.ErrInvalidReceipt (unknown, but the environment was reached),
// as does an answer envapi.CheckResponse refuses (another sequence, an
// identifier quoting a secret, a receipt of a kind the operation does not
// take: setup, detach, teardown and cancel are answered accepted, failure
// or unknown, never progress, result or returned). Bounds: Config.MaxResponseBytes (32 MiB),
// Config.ResponseTimeout (120 s) and Config.ConnectTimeout (5 s), from
// BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES, _SECS and _CONNECT_SECS. A remote
// agentloop's execute (an execute naming no tool) is its turn: the turn's
// deadline bounds it, not ResponseTimeout.
//
// # Credentials Brain hands out
//
// An execute's callback grant carries a fresh token for that invocation
// only: the lease epoch the node holds on the session (Config.Epoch; 0
// outside a cluster), 16 random bytes and an HMAC-SHA256 over them, the
// session, the operation and its kind, keyed from the server key (the
// format is in tokens.go). Any node sharing the server key can thus check
// a token's origin and epoch (VerifyInvocation) before forwarding its
// call to the session's owner; whether it is still live only the owner
// knows: it lives only in memory there, is stored as a SHA-256 digest, is
// revoked when the execution completes or is cancelled, is refused once
// the node's lease epoch on the session changed (a failover interrupted
// the execution), and does not survive a restart: afterwards every call
// with it is 401. The
// engine closes the channel op.CallbackDone (op.ContextDone for the
// controller context) when the execution (context) closes; the token dies
// then.
//
// Every operation also carries its own controller context grant
// {url, token, methods: [environments, emit, result]}, served at the same
// call route under the operation's sequence with a token of its own (for
// an execute, distinct from the callback's): the engine's Controller for
// that operation, bounded by the environment's grants, revoked when the
// operation returns or is cancelled.
//
// Callback and reporter URLs are Config.PublicURL (BRAIN_PUBLIC_URL)
// followed by their paths; a public URL with userinfo, a query or a
// fragment is refused by New and SetPublicURL, and the error does not
// quote it.
//
// Every operation carries the binding's reporter grant. Its token is an
// HMAC-SHA256 of (session, environment, binding sequence) under a 32-byte
// server key (Config.Key, or the file Config.KeyFile, created with mode
// 0600 on first use and linked into place, so that two first starts keep
// one key), so it survives a restart without being journaled. A key file
// that is not a regular file (a named pipe would hold the server's start),
// that group or others may read or write, or that another user than the
// one running the server owns is refused with ErrKey, an error naming it
// and the chmod or chown that puts it right.
// A report for a binding that was closed or replaced is refused with 404.
//
// Tokens, environment credentials and the server key never appear in the
// journal, in events, in logs or in error bodies. A call made with an
// operation's grant has that operation's credential and tokens removed
// from its input (Grant.Redact), as a receipt has. A report has its
// reporter token and the credential its binding's operations carry (the
// session's credential, a route's or the default route's key) removed
// from its event type, data and output (RedactReport): the engine reads
// that credential from its Secrets when the report arrives
// (session.Report.Redact), so a reporter used after a restart is
// redacted too. A provider knows every token it was sent, so a call and
// a report also have removed the reporter token of every current binding
// of the session and the credentials of every declared environment of the
// session (these outlive their operations, and a restart), and the
// credential and tokens of every operation of the session whose tokens
// are still live (an execute under way, its controller context). An
// event type that quoted one is then no event name and is refused (422
// reserved_name), as an emit's is.
//
// # Service call errors
//
// A missing, wrong or revoked token answers 401 unauthorized; a method the
// grant does not list 403 not_granted; a reserved event name 422
// reserved_name; an exhausted emission budget 409 emit_limit. Mutations
// answer the committed sequence as a bare JSON integer.
package envbind
