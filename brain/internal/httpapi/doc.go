// Package httpapi is Brain's HTTP API, every route of it: routes on a
// net/http.ServeMux over the session engine, the agentloop host
// (loophost) and the environment bindings (envbind), bearer
// authentication, strict request decoding,
// durable Idempotency-Key handling (package idem), the ApiError body and its
// status mapping, event pages and server-sent event streams, and graceful
// drain.
//
// # Routes
//
//	GET    /health/live                      204
//	GET    /health/ready                     204, 503 while draining, while durable writes fail or while the
//	                                         storage backend does not answer (each change logged once, with why)
//	POST   /v1/sessions                      key; 200 SessionSummary
//	GET    /v1/sessions                      200 SessionList
//	GET    /v1/sessions/{id}                 200 SessionSummary
//	DELETE /v1/sessions/{id}                 key; 204
//	POST   /v1/sessions/{id}/messages        key; 200 SessionSummary, or with
//	                                         Prefer: respond-async 202 and
//	                                         the turn_started sequence
//	GET    /v1/sessions/{id}/transcript      200 SessionTranscript, or with
//	                                         ?from=N&limit=M or ?tail=M
//	                                         (M ≤ 1000) 200 TranscriptPart
//	GET    /v1/sessions/{id}/events?after=N  200 EventPage, or SSE
//	POST   /v1/sessions/{id}/cancel          key; 204
//	POST   /v1/sessions/{id}/end             key; 200 SessionSummary
//	POST   /v1/agentloops                    key; octet-stream module;
//	                                         200 AgentloopAdmission
//	GET    /v1/agentloops/{id}               200 AgentloopAdmission
//	POST   /v1/tools                         key; octet-stream module;
//	                                         200 ToolAdmission
//	GET    /v1/tools/{id}                    200 ToolAdmission
//	POST   /v1/sessions/{id}/environments    key; EnvironmentControlRequest
//	POST   /v1/sessions/{id}/environments/{env}/calls/{name}
//	                                         key; {"input"} → {"output"}
//	POST   /v1/sessions/{id}/executions/{sequence}/call
//	                                         invocation token; service call
//	POST   /v1/sessions/{id}/environments/{env}/{sequence}/events
//	                                         reporter token; report
//	POST   /v1/hosts                         200 {host_id, token}
//	GET    /v1/hosts/{host_id}/commands      host token; SSE of
//	                                         event: command (HostCommand)
//	POST   /v1/hosts/{host_id}/results       host token, optional key;
//	                                         HostResult → {sequence}
//	POST   /v1/hosts/{host_id}/events        host token, optional key;
//	                                         HostEvent → {sequence}
//	POST   /v1/hosts/{host_id}/model         host token; → ModelResult
//	POST   /v1/hosts/{host_id}/call          host token, optional key
//	                                         (methods that record);
//	                                         service call
//	POST   /v1/hosts/{host_id}/suspend       host token; {connection} →
//	                                         {suspended}
//
// Every application route needs "Authorization: Bearer <token>" when the
// server has a token (compared in constant time; the scheme's case does
// not matter, as in every HTTP authentication scheme); health routes are
// open.
// The execution call and reporter routes authenticate their callers by
// the invocation and reporter tokens of the environment bindings
// (Options.Bindings) instead; a missing, wrong or revoked one answers 401,
// a method the grant does not list 403 not_granted. The agentloop routes
// need Options.Agentloops, the environment routes Options.Bindings, the
// host routes Options.Hosts. A host's routes take that host's token only:
// the server token is refused there, and the host token everywhere else.
// A method a served path does not serve is answered (405 with Allow;
// OPTIONS 204 with Allow) before any token is checked, to every caller,
// without reading a body: it tells only the route table, which the
// OpenAPI document publishes. A path no route serves answers 404 to the
// server token (and, under a host's path, to that host's token), 401 to
// anyone else.
//
// # Connections
//
// conn.go states the connection bounds brain serve applies
// (ReadHeaderTimeout, Options.BodyReadTimeout backed by ReadTimeout,
// IdleTimeout, LimitListener): a body that does not arrive in time is
// answered 400 at once and its connection closed; a request that fails
// authentication or goes to a health route is answered without reading
// the body it announced, and one refused (4xx, 5xx) before its body was
// read (for its path or headers: an Idempotency-Key, a Content-Type, a
// Prefer) once at most 1 MiB of that body was discarded within a second,
// not after all of it; then its connection is closed.
//
// # Errors
//
// Every non-2xx answer is an api.ApiError, built by one function
// (ErrorOf) from engine, idempotency and request errors. Malformed JSON
// (a body that is not UTF-8 or gives an object member twice included), a
// bad path or query value, a missing, oversize or repeated
// Idempotency-Key, an unsupported Prefer and a malformed Accept of a
// stream route answer 400 invalid_request; a
// well-formed body with an invalid or unknown field 422; a wrong
// Content-Type 415; a body over Options.MaxRequestBytes 413; a Tool's
// result, returned or finish call, or a host's result, returned or finish
// update or service call, over the bound on an environment's answer (the
// Binder's MaxResponseBytes, BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES) 413
// too, recording nothing: an outcome a provider or a host posts takes the
// bound of the execute answer that could have carried it, and, refused rather
// than recorded unknown as an oversized answer is, leaves the Tool open
// to finish with a smaller outcome (output_limit, say) before its
// deadline; a method a served path does not serve 405 with Allow
// (OPTIONS: 204 with Allow). Engine errors map through StatusOf: 401
// unauthorized, 403 not_granted, 404 not_found, 409 conflict and emit_limit,
// 422 reserved_name, 503 overloaded, 500 for the rest (ambiguous,
// executor_failed, model and turn failures, internal). A message built
// from an error's text loses the package prefixes its wrapping added
// (cleanMessage).
//
// # Idempotency
//
// A mutation validates its request, then claims (operation, key) with a
// digest of method, path, Prefer mode and body; the claim is durable before
// the operation runs and the answer is durable before it is sent. A replay
// answers the stored status and body; a different request under the key
// answers 409; a claim an earlier process never answered answers 500
// ambiguous. A refused busy submission, a refusal while draining, an
// admission the closing agentloop host refuses before compiling (503
// overloaded) and a request the engine refuses as invalid before running
// it release the claim, so the key is not consumed. While draining every mutation but an
// interrupt (POST /v1/sessions/{id}/cancel) is refused with 503: an
// interrupt stops work the drain waits for; so is a registered host's
// commands stream, its callback. Async (Prefer: respond-async)
// and synchronous sends are separate operations.
//
// On the file store (an idem.Rider) the claims of sends ride the session
// journal (idem.Store.ClaimRiding): a synchronous send's claim is carried
// by its turn's first commit and its answer by the turn's end; an async
// submission's claim and its answer, the turn_started sequence, are
// carried by the one commit of turn_started and activation_started, and
// the 202 is sent once that commit returned. On a store that cannot ride
// (a database's), an async submission on a session with no other send or
// delete in flight claims with a hint (the session id and its next
// journal sequence) and sends its 202 as soon as turn_started is
// committed, without waiting for its answer record to be flushed: the
// answer is derivable from the hinted claim and the journal (Derive,
// called when the requests log is opened). Either way, sends and deletes
// of the session wait while an async submission is unsettled. The idem
// package documentation gives the argument.
//
// # Event streams
//
// With "Accept: text/event-stream" (named with a weight above 0, not
// through a wildcard, and application/json not weighted above it; an
// Accept that refuses both with weight 0 answers 406, a malformed one
// 400, and one that merely does not list JSON gets JSON, as on every
// route) the events route subscribes first, then
// sends the committed events after the cursor (after=N, else Last-Event-ID,
// else 0), then follows new commits. A recorded event is the frame
// "id: <sequence>", "event: <event_type>", "data: <Event JSON>"; a live
// model frame has no id line. The live frames of a model call
// (model_request, model_output, model_usage; best effort, dropped for a
// slow reader, a model_output frame numbering its delta among the call's
// from 0 in index, so that a gap shows) come after the model_call_started
// event they name in model_call_sequence and before that call's
// model_call_ended or model_call_failed (session.Subscription). The stream ends after
// session_ended or session_creation_failed (a stream of a session that has
// already ended, after the records its cursor has not seen: a failed
// delete's teardown records follow session_ended), when the subscriber
// lags more than Options.MaxLiveBacklog records behind (it reconnects with
// its cursor; a stream still reading history is not behind: what is
// committed meanwhile it reads from the journal after the history), and on
// drain. Comment lines keep idle streams open: one at least every
// Options.Heartbeat, which the response names in milliseconds in its
// Brain-Heartbeat-Ms header, so that a client can tell a connection
// dropped on the way (no frame and no comment for a few intervals) and
// reconnect with its cursor.
//
// The streams of a session share one engine subscription: each frame is
// encoded once, and the frames received together (a commit's records) are
// encoded once more as one chunk, handed to every stream without blocking,
// so a stalled reader slows neither commits nor other readers. On HTTP/1.1
// the connection is taken over after the response head ("Connection:
// close", chunked body), so an idle stream holds no goroutine and no
// buffers. The fan-out writes the shared chunk to each idle stream's
// socket itself, with one non-blocking write (the streams split among
// GOMAXPROCS workers); a writer goroutine runs only for a stream whose
// socket buffer is full or that is still catching up, and writes the
// frames queued meanwhile as one chunk.
package httpapi
