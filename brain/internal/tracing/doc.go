// Package tracing builds Brain's OpenTelemetry export: the TracerProvider
// whose spans the engine, the HTTP API and the environment and model
// transports start, and the OTLP log sink telemetry records go to. It is
// the only package that imports the OpenTelemetry SDK and the OTLP
// exporters; everything else instruments against the API
// (go.opentelemetry.io/otel/trace), so a Brain without OTLP settings links
// the exporters but never runs them.
//
// # Settings
//
// Settings carry the standard OTLP exporter variables as data (the
// library reads no environment; "brain serve" maps them):
//
//	OTEL_EXPORTER_OTLP_ENDPOINT           base URL of every signal; /v1/traces
//	                                      and /v1/logs are appended (http/protobuf)
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT    URL of the traces export, used as is
//	OTEL_EXPORTER_OTLP_LOGS_ENDPOINT      URL of the logs export, used as is
//	OTEL_EXPORTER_OTLP_PROTOCOL           http/protobuf (default) or grpc
//	OTEL_EXPORTER_OTLP_{TRACES,LOGS}_PROTOCOL
//	OTEL_EXPORTER_OTLP_HEADERS            k=v,k2=v2 (values URL-encoded), sent
//	                                      with every export (e.g. an API key);
//	                                      brain.Config refuses a name that is not
//	                                      an HTTP token or a value with a control
//	                                      character
//	OTEL_EXPORTER_OTLP_{TRACES,LOGS}_HEADERS  merged over the general ones
//	OTEL_EXPORTER_OTLP_INSECURE           true: no TLS for grpc endpoints; the
//	                                      scheme wins: https keeps TLS whatever it says
//	OTEL_EXPORTER_OTLP_{TRACES,LOGS}_INSECURE
//	OTEL_EXPORTER_OTLP_TIMEOUT            milliseconds per export (default 10000)
//	OTEL_EXPORTER_OTLP_{TRACES,LOGS}_TIMEOUT
//	OTEL_EXPORTER_OTLP_COMPRESSION        gzip or none (default)
//	OTEL_EXPORTER_OTLP_{TRACES,LOGS}_COMPRESSION
//	OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER  otlp (default) or none: none
//	                                      exports nothing of that signal
//	OTEL_SERVICE_NAME                     service.name of the resource (default brain)
//	OTEL_RESOURCE_ATTRIBUTES              k=v,k2=v2: more resource attributes
//	OTEL_SDK_DISABLED                     true: nothing is exported at all
//
// An endpoint is an absolute http or https URL without credentials, query
// or fragment (the exporters send only its host and path: they would drop
// user:password or a key given as a parameter and export
// unauthenticated; credentials go in a header instead). A signal is exported only when an endpoint names where to, its exporter
// is not none and the SDK is not disabled. Otherwise NewTracerProvider
// answers a nil provider and NewLogSink a nil emitter, and the callers then start no spans and send no trace context
// at all (not even one that arrived with a request).
//
// An export that fails (the collector is down or refuses it) is said in
// the server's log (Settings.Log) at warn level, "telemetry export
// failed" with its signal and its error (the first 1024 bytes of it: what
// a collector answers is quoted there, and may be megabytes; the values of
// the export's headers, which a refusal may echo, are left out of it as
// [redacted]): the first,
// then at most one a minute, with the count of failures not logged
// meanwhile. OpenTelemetry's global
// error handler, which would write each failed batch to the standard
// library's log, never hears of them.
//
// A Shutdown flushes within its context and no longer: when the context
// ends first, or the collector refuses what is flushed, it answers a
// *NotExportedError counting the spans or log records it did not send.
//
// # Spans
//
// Brain's spans (names and the attributes every one carries):
//
//	HTTP request   server span named by the route pattern ("POST
//	               /v1/sessions/{id}/messages"; a request no route takes
//	               by its method, "HTTP" for one HTTP does not define),
//	               http.request.method ("_OTHER" for such a method, the
//	               one sent, cut to 64 bytes, in
//	               http.request.method_original), http.route when routed,
//	               http.response.status_code, brain.session_id when the
//	               route names one (/v1/sessions/{id}...; the {id} of a
//	               Tool or agentloop route is none); W3C traceparent/tracestate of the
//	               request are its parent
//	brain.turn     brain.session_id, brain.sequence (turn_started)
//	brain.activation  brain.session_id, brain.sequence (activation_started)
//	brain.model_call  brain.session_id, brain.sequence (model_call_started)
//	brain.tool_call   brain.session_id, brain.sequence (tool_call_started),
//	               brain.tool, brain.environment
//	environment operation  client span "environment <type>" of each
//	               operation, whatever serves it (a POST /v1/operations,
//	               a host connection's command, a Wasm Tool run by the
//	               built-in environment), brain.session_id, brain.sequence
//	               (the record that started the operation),
//	               brain.environment, brain.driver, brain.receipt, and
//	               http.response.status_code over HTTP
//
// Parents: request → turn → activation → model call or tool call →
// environment operation → the provider's own spans (envsdk starts an
// operation's context from the traceparent Brain sends). On a cluster, a
// write forwarded to its session's owner carries the receiving node's
// request span as its traceparent, so the owner's request span is that
// span's child. An error or a failed outcome sets the span's status to
// Error with the failure code; a request whose response was cut off part
// way (a relayed answer or an event stream aborted) is an Error too.
// Credentials and tokens never become attributes. A string attribute, and
// the description of an Error status (a failure's message), is exported
// cut to MaxAttributeValue (1024) characters, between characters: a
// session id taken from a request's path is the client's to choose, a
// failure's message a provider's, and a batch of spans carrying megabytes
// of either would be refused by the collector as a whole. A string that is
// not UTF-8 (a session id sent percent-encoded) is exported with its bad
// bytes replaced by U+FFFD: it could not be encoded, and its whole batch
// would be lost. Log records' attributes are made UTF-8 the same way.
//
// At most MaxQueuedSpans (2048) ended spans wait for export; one ended
// beyond that, while the collector is slow or down, is dropped rather than
// held or waited for (ending a span never waits for the network).
// Settings.SpansDropped is told of every span not exported, with its
// reason: queue_full for those, export_failed for those whose export
// failed ("brain serve" counts them in brain_trace_spans_dropped_total).
// The server's log says "spans dropped: the trace export queue is full"
// at the first drop of a streak, which ends when an export reaches the
// collector again, and at most once a minute.
//
// # Logs
//
// NewLogSink exports records over OTLP logs: a LogEmitter's Emit sends one
// record with an event name, attributes, a body and a timestamp. Records
// are batched; the sink's Delivery is told, in the order they were
// emitted, which the receiver accepted and which it did not: all of an
// export it refused or that did not reach it, the rejected_log_records of
// an OTLP partial success, and at Shutdown those never exported. At most
// 2048 records wait for export; beyond that Emit refuses the record
// (ErrLogQueueFull) rather than drop one unreported. A batch is sent in
// requests of at most about 3 MiB of bodies and attributes each (a
// collector refuses a request past its own bound as a whole, 4 MiB over
// gRPC by default), each reported as its receiver answered.
package tracing
