// Package api holds the wire types of Brain's session API: session
// summaries and create requests, messages and content blocks, events and
// event pages, transcripts, the ApiError body with its closed code set
// (and an error of each code, for errors.Is), the journal record kinds
// and the set of names extensions may not emit.
// It also carries the service-table wire types shared by agentloops and
// tools (model requests and results, tool invocations and returns, turn
// input and output), so that a loop compiled for any target can use them.
//
// The package depends on the standard library only.
package api
