// Package commits counts the serial durable commits a request waits on:
// each journal append the session engine makes on the request's behalf
// and each idempotency-log flush the request waits for, including the
// rewrites of requests.log that run inline on its path (a compaction its
// answer or release triggers, the rewrite that recovers from an earlier
// write failure before its claim), each counted as one commit. A Counter travels
// in the request's context (With, From); the engine keeps the counter of
// the turn it runs, so commits made after an async submission was
// answered still reach it.
//
// A Ride (WithRide, RideFrom) carries a request's idempotency claim and
// answer as private journal records (ClaimKind, AnswerKind) that ride the
// request's own journal commits instead of flushes of their own; the idem
// package owns their format.
//
// The counts are what the tests assert (a change that adds a serial
// commit to a request fails them) and what the commit budget in
// RATIONALE.md is written against.
package commits
