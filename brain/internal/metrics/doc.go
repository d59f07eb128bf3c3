// Package metrics keeps Brain's Prometheus metrics and serves them in the
// Prometheus text format. It is the only importer of the Prometheus client.
//
// Most metrics are read off the journal as records become durable
// (journal.Options.OnDurable and OnCommit), so that they count what was
// committed, not what was attempted. With PostgreSQL each node counts the
// records it committed (pgstore.Options.OnDurable and OnCommit; see "On a
// cluster"):
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
//	brain_sessions_active                        gauge      sessions this node holds in memory
//	brain_sessions_passivated                    gauge      stored sessions held in memory by no node
//	brain_sse_subscribers                        gauge      open event streams
//	brain_sse_lag_cutoffs_total                  counter    event streams ended because the subscriber lagged
//	brain_idempotency_hits_total                 counter    requests answered from a stored answer
//	brain_http_requests_total{route,code}        counter    API requests by route pattern and status
//	brain_http_request_seconds{route}            histogram  API request duration (streams until they end)
//	brain_http_forwarded_requests_total{route,code} counter  writes another node forwarded to this one (see "On a cluster")
//	brain_telemetry_records_total                counter    telemetry records delivered: written to the file, accepted by the OTLP receiver
//	brain_telemetry_dropped_total{reason}        counter    telemetry records dropped: oversized, invalid, rate_session, rate_global, queue_full, write_error, no_sink, closed
//	brain_trace_spans_dropped_total{reason}      counter    spans not exported over OTLP: queue_full (the export queue was full), export_failed (the collector was down or refused them)
//
// # On a cluster (PostgreSQL backend)
//
// Every node serves its own /metrics. The counters and histograms count
// what that node did: the journal metrics, turns and effects the records
// this node committed (a group commit's "fsync" is its transaction, from
// send to commit), the HTTP, stream, idempotency and telemetry metrics the
// requests, streams and records this node served. Summed over the nodes
// they count the cluster's. A write forwarded to its session's owner is
// counted in brain_http_requests_total and brain_http_request_seconds
// once, by the node the client sent it to, with the status the client got
// and the time until it got it (a forward that failed included); the
// owner counts it in brain_http_forwarded_requests_total instead. A
// latency is timed only when the node that committed an effect's start
// also commits its end (an effect ended by another node after a failover
// is counted, not timed).
//
// brain_sessions_active is per node: the sessions it holds in memory,
// each under its lease; summed over the nodes it is the sessions active in
// the cluster. brain_sessions_passivated is the cluster's: the sessions in
// the database that no node holds a live lease on (passivated, or left by
// a node that died until another takes them over). Every node reports the
// same number, so aggregate it with max, not sum:
//
//	sum(brain_sessions_active) + max(brain_sessions_passivated)
//
// is the number of sessions in the database. It is counted by the database
// in one aggregate query, kept for pgstore.PassivatedEvery (5 s), so a
// scrape costs the node the same whatever the number of sessions, and the
// database at most one count per node every 5 s; it can lag the leases by
// that much, and while the database does not answer it keeps its last
// count. With the file backend it is the sessions on disk less those held
// in memory, the sessions on disk counted at most every 5 s too (and the
// last count kept while the directory cannot be listed).
//
// Labels are bounded: outcomes and codes come from closed sets (anything
// else is "other") and routes are the mux's patterns. A failure's code is
// its label when it is one of Brain's failure codes (api.FailureCodes),
// API error codes (api.ErrorCodes: a model call that the provider failed
// is model_provider_failed) or the codes the environment protocol names
// (envapi: invalid_configuration, environment_failed, ...). Session ids
// never become labels.
package metrics
