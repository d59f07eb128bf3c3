// Package telemetry carries the diagnostic records that agentloops and
// tools send to Brain's telemetry service to a configured sink. Records
// are best effort and never journalled: a Pipeline bounds them in size and
// rate, queues them on a bounded channel read by one writer goroutine, and
// drops (and counts) what it cannot take, so that a record never blocks or
// fails the turn that sent it.
//
// Every record is wrapped in an Entry whose Origin Brain assigns from the
// execution that sent it: the session, the turn and activation, and the
// agentloop, tool or environment context (the same origin its emitted
// events carry). The record itself is nested under "record", so nothing in
// it can change the origin.
//
// A Sink receives entries one at a time from the writer goroutine. File is
// the JSON-lines sink (BRAIN_TELEMETRY_FILE); the server adds an
// OpenTelemetry logs exporter as another Sink when a logs endpoint is
// configured (the record as the log body, the origin as attributes:
// brain.session_id, brain.turn, brain.activation, brain.origin.kind,
// brain.origin.sequence, brain.origin.environment.name and
// brain.origin.environment.sequence, brain.tool, brain.environment), and
// writes to both when both are. The exporter is an AsyncSink: it learns
// only after an export whether the receiver accepted the records, and
// reports that to the pipeline then.
//
// # The JSON-lines file
//
// One entry per line, UTF-8 JSON without insignificant whitespace:
//
//	{"recorded_at_ms":1767225600000,"session_id":"ses_...","turn":3,
//	 "activation":4,"origin":{"kind":"tool","sequence":7},"tool":"read",
//	 "environment":"workspace","record":{...}}
//
// recorded_at_ms is when Brain accepted the record; turn is the turn's
// turn_started sequence (absent for event-triggered activations);
// activation is the activation_started sequence; origin is an EventOrigin
// ({kind:"agentloop"|"tool", sequence} or {kind:"environment",
// environment:{name, sequence}}); tool and environment name the tool call
// and its environment when the sender is a tool; record is the record as
// sent, compacted.
//
// The file is opened for appending (mode 0600) and created if missing.
// When a line would take it past its size bound, the file is renamed to
// the same name with ".1" appended (replacing an older one) and a new file
// started, so at most about twice the bound is kept. A path that is not a
// regular file (a device such as /dev/stdout, a named pipe) is written to
// as it is, never renamed: the bound is then the reader's. A write that fails
// (disk full, the file's directory gone) drops that entry and closes the
// file; the next entry reopens it, first ending a torn last line with a
// newline, so a passing fault does not stick.
//
// # Counters
//
// Stats answers the entries written and the records dropped by reason:
// oversized (beyond the record bound), invalid (not JSON, which a record
// that is not UTF-8 is not either; the sender is answered an error), rate_session and rate_global (beyond a token
// bucket), queue_full (the writer is behind), write_error (the sink
// failed), no_sink (none is configured) and closed (sent during shutdown).
// An entry is written once its sink delivered it: the file took it, the
// OTLP receiver accepted it (an export it refused, one that did not reach
// it, the records an OTLP partial success rejected and those still
// unexported at shutdown are write_error); with both sinks, once both
// did, and it is dropped once when either failed. Until an AsyncSink
// reports an entry it is pending, neither written nor dropped.
//
// The sink's failures are said in the log (Options.Logger): the first
// failure of a spell and the recovery that ends it, at most one spell a
// minute; the next one logged counts the spells that were not
// (failure_spells_not_logged), so that a sink failing and recovering over
// and over (a collector slower than the records) does not flood the log.
package telemetry
