// Package ui holds the session inspector: a static page, embedded in the
// binary, that httpapi serves at /ui/.
//
// The page is plain HTML, CSS and JavaScript with no build step. It talks
// to the session API of the same origin only: it asks the operator for the
// bearer token, keeps it in the tab's sessionStorage and sends it in the
// Authorization header of every request, never in a URL (a Brain that
// serves without a token, on a loopback address, answers the page's first
// read made without one, and the page then asks for none). It lists the
// sessions with their status and shows one session's timeline (turns,
// activations, model calls, tool calls and environment operations with
// their durations and outcomes, extension events and observations with
// their origin, each a row of its own whatever its name), following the
// events stream while the session runs, including the live model deltas.
// The text a model call streams is appended under its row once per
// animation frame, in blocks of a few thousand characters ended at line
// breaks, so that writing and laying out a delta costs in proportion to
// the delta, not to the text streamed before it; while the call runs the
// row keeps at most the first 1,048,576 characters and then says that the
// rest does not show yet (or, once the call has failed, that it has no
// answer to show), and once the call has ended the row shows the
// text of its answer (live frames are best effort: those sent while the
// stream reconnected, or dropped for a slow reader, are not sent again;
// the deltas of a call are numbered, and where some did not reach the
// page, because the stream reconnected, the session was opened after the
// call's first delta or the server dropped them for a slow reader, the
// running call's row marks the place where text is missing).
// The stream is read with fetch rather than EventSource, which cannot send
// headers; when the stream ends before the session does (a lag cut-off, a
// drain), or sends nothing, not even a heartbeat comment, for three of the
// heartbeat intervals the server names in its Brain-Heartbeat-Ms header (a
// proxy dropped the connection without closing it), the page reconnects
// after the last sequence it saw and says so; once the stream opens again
// after attempts that failed, their error no longer shows as current and
// the note says since when the stream failed. A session that does not
// exist (or was deleted) is reported as such and not followed. A record
// of any size costs the stream's reader in proportion to its size, in
// however many chunks it arrives: each chunk is searched once for the end
// of a record. The session's status is read again as its records arrive,
// and its transcript whenever its tab is shown and, while it shows, as
// the records that change it arrive (not while it is hidden), each at
// most 150 ms after a record that changes it, however steadily records
// stream (the pager's counts likewise); an answer
// that a later read overtook is not shown over the newer one. The error
// of a read that failed (of the status, the transcript, a page of events
// or the earlier records the environments are folded from) shows until a
// later read of the same succeeds, unless another error shows since; a
// read that has no full answer within 30 seconds is given up and fails so
// (the page's actions are not given up: their answer says whether they
// were taken), and the reads of a session (or of the list) under way
// when the page leaves it are given up then, so that they hold no
// connection the view opened next needs. The
// stream starts where the status read as the session opens says: a read
// of the status that fails, then or later, is tried again, first after
// half a second, then after waits that double up to eight seconds, and
// so is one of the transcript while its tab shows, so that neither stays
// stale when no record comes to read it again. The session list is refreshed in place, so
// that the keyboard focus stays where it was. A session's views are a tab
// list: only the selected tab is in the Tab sequence, and the arrow keys,
// Home and End select the tab they move to. The timeline and the events table
// show a window of the events: a session opens at its newest 500 (its
// stream starts there), the window holds at most 1000 while it follows,
// and older and newer pages are read from the events API on demand (a
// page whose read fails leaves the window as it was, still following if
// it was, so that the same button reads the page again; while the newest
// page is read, the page holds at most 2000 of the records that stream
// meanwhile, the window showing at most the newest 1000), so a
// session of any length opens and follows in bounded time and memory (an
// entry an older page leaves open says that it continues past the page,
// not that it runs); the
// environments are folded from the earlier records the first time their
// tab shows, or as the session opens if their tab is the one selected
// (until then the page holds at most 1000 of the records it
// streams for them, and reads the others with the earlier ones; a fold
// whose read fails starts afresh the next time the tab shows). The events
// table says when each record was recorded: its date and time in the
// browser's time zone, titled with the time in UTC. It also shows the
// transcript (its newest 200 messages, saying how many earlier ones do
// not show, and 200 earlier ones more each time the operator asks; only
// the messages that show are read, with the transcript route's tail, or
// from and limit, query values; a block shows at most the first 65,536
// characters of its text, and the rest when asked, and stays shown
// whole when the transcript is shown again while that text is still in
// its place, so that showing the transcript again as a long session
// runs costs in proportion to what shows) and the environments
// with their bindings, and it can send a message (asynchronously, with a fresh
// Idempotency-Key; one at a time per session, Send is disabled while it
// is sent; a message whose outcome stayed unknown, no answer or a 5xx,
// keeps its key, so the same text sent again is not run twice) and cancel the running turn. The message box keeps a draft per
// session: the text typed for one session shows again when that session
// is opened again and never in, or sent to, another. The answer to a
// message or a cancel shows on the session it was sent to: one that
// comes after the page left that session leaves the session shown as it
// is, and its error shows when the session is opened again.
//
// httpapi serves the files with a Content-Security-Policy that allows only
// same-origin scripts, styles and requests, so the page has no inline
// script; it builds its DOM with textContent and text nodes and never
// interprets event data as markup.
package ui
