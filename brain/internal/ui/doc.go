// Package ui holds the session inspector: a static page, embedded in the
// binary, that httpapi serves at /ui/.
//
// The page is plain HTML, CSS and JavaScript with no build step. It talks
// to the session API of the same origin only: it asks the operator for the
// bearer token, keeps it in the tab's sessionStorage and sends it in the
// Authorization header of every request, never in a URL. It lists the
// sessions with their status and shows one session's timeline (turns,
// activations, model calls, tool calls and environment operations with
// their durations and outcomes, extension events and observations with
// their origin), following the events stream while the session runs,
// including the live model deltas. The stream is read with fetch rather
// than EventSource, which cannot send headers; when the stream ends before
// the session does (a lag cut-off, a drain) the page reconnects after the
// last sequence it saw; a session that does not exist (or was deleted) is
// reported as such and not followed. The session list is refreshed in
// place, so that the keyboard focus stays where it was. It also shows the
// transcript and the environments
// with their bindings, and it can send a message (asynchronously, with a
// fresh Idempotency-Key) and cancel the running turn.
//
// httpapi serves the files with a Content-Security-Policy that allows only
// same-origin scripts, styles and requests, so the page has no inline
// script; it builds its DOM with textContent and never interprets event
// data as markup.
package ui
