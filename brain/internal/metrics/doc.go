// Package metrics keeps Brain's Prometheus metrics and serves them in the
// Prometheus text format. It is the only importer of the Prometheus client.
//
// Most metrics are read off the journal as records become durable
// (journal.Options.OnDurable and OnCommit), so that they count what was
// committed, not what was attempted. With PostgreSQL each node counts the
// records it committed (pgstore.Options.OnDurable), and the two journal_*
// histograms, which time the data directory's commit log, stay empty:
//
//	brain_journal_fsync_seconds                  histogram  commit log flush per group commit
//	brain_journal_group_commit_records           histogram  records made durable per group commit
//	brain_turns_total{outcome}                   counter    turns ended: ok, or the failure code
//	brain_effects_total{kind,outcome}            counter    effects (model_call, tool_call, environment_setup, ...) ended: ok or the failure code
//	                                                        (a tool call's outcome status: timeout, cancelled, unknown, or tool_error for an error)
//	brain_model_call_seconds                     histogram  model_call_started to its end, by the records' times
//	brain_tool_call_seconds                      histogram  tool_call_started to its end
//	brain_environment_operation_errors_total{code} counter  failed environment operations by failure code, and unreachable environments
//
// and the rest from the parts that know them:
//
//	brain_sessions_active                        gauge      sessions held in memory
//	brain_sessions_passivated                    gauge      sessions on disk not held in memory
//	brain_sse_subscribers                        gauge      open event streams
//	brain_sse_lag_cutoffs_total                  counter    event streams ended because the subscriber lagged
//	brain_idempotency_hits_total                 counter    requests answered from a stored answer
//	brain_http_requests_total{route,code}        counter    API requests by route pattern and status
//	brain_http_request_seconds{route}            histogram  API request duration (streams until they end)
//	brain_telemetry_records_total                counter    telemetry records written to the sink
//	brain_telemetry_dropped_total{reason}        counter    telemetry records dropped: oversized, invalid, rate_session, rate_global, queue_full, write_error, no_sink, closed
//
// Labels are bounded: outcomes and codes come from closed sets (anything
// else is "other") and routes are the mux's patterns. Session ids never
// become labels.
package metrics
