// Package client is a Go client for Brain's session HTTP API.
//
//	c, err := client.New("http://127.0.0.1:8080", &client.Options{Token: token})
//	if err != nil { ... }
//	defer c.Close()
//	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
//		Model: api.ModelConfig{Provider: "scripted", Name: "demo"},
//	})
//	sum, err := s.Send(ctx, api.UserInput{Message: "hello"})
//	for ev, err := range s.Events(ctx, 0, client.Follow()) { ... }
//
// Every mutation carries an Idempotency-Key: IdempotencyKey sets it, and
// otherwise the client makes a random one per call. A mutation is sent
// again only with its key, so it runs at most once: a call whose answer
// does not arrive (a lost connection; a 408 or any 5xx, a 500 included,
// whose body is not Brain's error, of a proxy in front of the server in
// its stead; an ambiguous answer marked retryable, which a node of a
// cluster gives when the answer of the node it forwarded the call to was
// lost) is retried with the same key (Options.Retries). A call whose
// outcome is still unknown then, or when ctx ends or the client closes
// while it is under way, fails with an
// *UncertainError that carries the key: send it again with
// IdempotencyKey(Key). So does a mutation Brain answers 503 overloaded,
// which is not sent again: Brain gives that answer to a call it refused
// (a drain) and also to one whose outcome it does not know (a node of a
// cluster that lost the session's lease while the call ran, a storage
// commit of unknown outcome). The same call sent without that key is a new
// request and may run a second time. Submit and Send are separate
// operations on the server: retry an uncertain Submit with Submit and the
// same key.
//
// Errors the server answers are *api.ApiError values: errors.As finds
// the answer, and errors.Is tells its code against the errors of the
// codes in package api (errors.Is(err, api.ErrNotFound)); a proxy's
// error answer without one becomes one with the code of its status
// (invalid_request for a 400, 405, 413, 415 or 422; unauthorized for a
// 401 or 403; not_found for a 404 or 410; conflict for a 409;
// overloaded, retryable, for a 429 or 503; internal for any other,
// retryable for a 408 and any 5xx, which stand in for the server's
// answer), whose message says it is not Brain's answer and quotes at
// most 512 bytes of it. A mutation such a 429 refused was not passed on: it is not sent again,
// and is uncertain only when an earlier attempt's answer was lost. So is
// a mutation answered with a redirect that the HTTP client follows with
// a GET (a 301, 302 or 303, as from http to https): it fails with
// ErrRedirected rather than take the GET's answer for its own. An
// error answer that quotes the bearer token its request carried
// (a debugging proxy's page that echoes the Authorization header), or,
// of a session's creation, the model's API key or an environment's
// credential its body carried (a page that echoes the body), has
// each replaced by "[redacted]" in the error and its ApiError, when it
// is 8 bytes or longer. The client reads at most 64 MiB of an error answer, so that a
// page that never ends fails the call, and at most 256 MiB of a
// successful one (Options.MaxAnswerBytes): a longer answer fails the call
// with ErrAnswerTooLarge, without a retry. An error answer's message
// longer than Brain's 4096 bytes is cut there.
//
// Reads (the GET requests: a session, the session list, an events page,
// the transcript, the model catalogue, a module's admission) are sent
// again (Options.Retries) when no answer arrived, a proxy answered in the
// server's stead (408 or any 5xx without Brain's error, or a 2xx that is
// not Brain's answer), or the server
// or a proxy answered 503 or 429 (a drain before a restart, a rate limit),
// after pauses growing from 100 ms that honour a Retry-After of up to
// 30 s within ctx's deadline; the last answer is the error. When ctx
// ends while a read or a keyed write waits to be sent again, or while it
// is, the error carries ctx's error and the answer of the attempt before
// (errors.Is and errors.As find each). A request without a key (a
// host's registration) is sent once. Health probes (Live, Ready) are
// sent once: they answer the state they find.
//
// ErrClosed reports use after Close. Close releases the client's
// connections and local handlers: open event streams end, host
// connections close and running host handlers see their ctx cancelled.
// It does not interrupt, end or delete sessions.
// WithToken answers a client with another token over the same HTTP client
// and retry settings, with its own lifetime.
//
// Send with a cancellable ctx owns its turn: cancelling ctx waits for the
// turn's admission, interrupts it and waits for the interrupt to be
// accepted before Send returns, so a host tool can hand its handler's ctx
// to a child session. SendStructured validates the final answer against
// a JSON Schema and sends corrections on the same session; its key is set
// with StructuredKey, and an uncertain SendStructured is sent again with
// StructuredKey(Key). Submit asks for Brain's answer at the turn's
// admission with the header Prefer: respond-async. Behind a proxy that
// drops the header Brain answers at the turn's end: Submit then answers
// the Receipt of that turn, or a failed turn's error, and Send with a
// cancellable ctx, which submits, cannot interrupt the turn.
//
// Beyond sessions the client covers environment control (ListEnvironments,
// GetEnvironment, CreateEnvironment, SetupEnvironment, UpdateEnvironment,
// DeleteEnvironment, CallEnvironment), environment method calls
// (CallMethod), agentloop and Tool modules (Agentloops and Tools, Upload
// and Get), the model catalogue (Models.List and Provider), the server's
// health (Live, Ready) and host environments: Host registers this process
// as a host whose handlers serve tool calls over one commands connection,
// ResumeHost serves a saved registration without waiting (ids are
// escaped into one path segment, as session ids are; ErrHostRegistering
// while a Host call registers), and Suspend closes an idle
// host's connection until Resume (a host that scales to zero). A host
// tool call's Emit, Result and Returned, its Call of a method that
// records (emit, result, returned, finish, set_transcript, kv_put,
// kv_delete), and the finish of its handler's outcome, are keyed writes:
// sent again with their key when the answer was lost, recorded once, and
// an *UncertainError when the outcome stays unknown; the finish is given
// up, an attempt under way included, at the call's deadline (30 s after
// the handler returned for a call without one). Its Call of any other
// method is sent once, without a key; given an IdempotencyKey, it is
// refused by Brain, which takes a key only with a method that records
// (invalid_request), rather than sent without it. Events
// carry their Origin on pages and streams alike. A 2xx answer that is
// not what its route answers (a captive portal's or a proxy's page,
// another server's JSON, JSON null, a missing required field) is an
// error, never a zero value: for every call, keyed or not, an
// *api.ApiError of code internal, retryable, whose message says the
// answer is not Brain's and quotes at most 512 bytes of it (none of a
// host registration's, which may hold a token). A read is sent again
// after it, a keyed write is sent again with its key (an *UncertainError
// when that answer stays), and a call without a key is not.
//
// Events iterates over committed events after a cursor, page by page until
// none are left; with Follow it streams them (server-sent events), and
// reconnects from the last sequence it yielded whenever the stream breaks,
// goes silent (nothing, not even a heartbeat comment, for three of the
// heartbeat intervals the server names, not counting the time the caller
// spends with an event; a stream that names none, as behind a proxy that
// drops the header, is watched with the interval a stream named last, or
// Brain's default of 15 s before any did; a request for the stream that
// is not answered in that time goes silent too) or the subscriber
// lagged, until the session ends or ctx ends. It outlives a server's restart: a
// connection refused, or answered with a retryable error while the server
// drains or a proxy in front of it answers in its stead, is tried
// again with growing pauses for FollowGiveUp before the error is yielded;
// when ctx ends first, the error yielded also carries the latest
// attempt's.
// An answer that cannot become a stream is yielded at once: a 200 that
// is not an event stream (ErrNotEventStream), and an event whose data
// does not decode, lacks its sequence or type, whose sequence is not its
// frame's id, whose type is not its frame's event name, or whose line,
// or data, is longer than 80 MiB (ErrMalformedEvent). A host's commands connection
// that goes silent likewise is connected again. A silent stream or connection also closes
// the idle connections of the client's HTTP client: they went its way (a
// NAT or a proxy that forgot them) and would take the next request only
// to leave it unanswered. A commands connection answered 200 with something other
// than an event stream stops the host with ErrNotEventStream; while
// connections are refused, Connected ending with its ctx carries the
// last refusal. A command longer than 80 MiB is not read: its call fails
// with code invalid_input naming the bound, and the connection goes on
// (Brain sends a command once, and a connection that ended would lose
// its calls). A command that does not decode fails its call so too, with
// why, when its start names the call (session, sequence and tool); one
// that names none is passed over.
package client
