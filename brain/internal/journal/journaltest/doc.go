// Package journaltest is the conformance suite every journal.Store must
// pass: Run(t, newStore) exercises append compare-and-set, dense sequences,
// monotonic recorded_at_ms, read paging, subscriptions, deletion, session
// listing and checkpoints against a fresh store per case.
package journaltest
