package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// heartbeatHeader names, on a stream's response, the interval in
// milliseconds of the comments Brain sends while the stream is idle.
const heartbeatHeader = "Brain-Heartbeat-Ms"

// silentBeats is how many heartbeat intervals a stream may stay silent
// before it is taken for a connection dropped on the way.
const silentBeats = 3

// maxHeartbeatMs bounds the intervals watched: a stream that names a
// longer one (a day) is taken for one without heartbeats, and not
// watched.
const maxHeartbeatMs = 24 * 60 * 60 * 1000

// defaultHeartbeat is the interval assumed of a server that has not
// named one on any stream of the client yet: Brain's default.
var defaultHeartbeat = 15 * time.Second

// errSilent reports a stream on which nothing arrived, not even a
// heartbeat comment, for silentBeats heartbeat intervals, or whose
// request was not answered in that time.
var errSilent = errors.New("client: stream went silent")

// heartbeat answers the heartbeat interval the server named on the
// client's latest stream, or the one assumed (defaultHeartbeat when the
// client was made) before any did.
func (c *Client) heartbeat() time.Duration {
	if ms := c.beatMs.Load(); ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return c.assumedBeat
}

// silenced answers the function that gives a stream up as silent: it
// closes the idle connections of the client's HTTP client, which went
// the way of the silent one (a NAT or a proxy that forgot them) and
// would take the next request only to leave it unanswered, and then
// cancels the stream's request with errSilent, which unblocks a pending
// read.
func (c *Client) silenced(cancel context.CancelCauseFunc) func() {
	return func() {
		c.hc.CloseIdleConnections()
		cancel(errSilent)
	}
}

// awaitAnswer bounds the wait for the answer (the response's head) of a
// stream's request: silent is called once silentBeats of the client's
// heartbeat interval passed without it. The stop answered ends the wait.
func (c *Client) awaitAnswer(silent func()) (stop func() bool) {
	return time.AfterFunc(silentBeats*c.heartbeat(), silent).Stop
}

// watchHeartbeat answers a reader of body that fails with errSilent once
// nothing arrived for silentBeats of the heartbeat intervals header names,
// by calling silent (which cancels the stream's request context and so
// unblocks a pending read), and the watchdog, whose stop ends the watch.
// The interval named is the client's from then on (Client.heartbeat). A
// response that names none (a server that does not, or a proxy that
// dropped the header) is watched with the client's interval; one that
// names a longer interval than maxHeartbeatMs is not watched: the
// watchdog is nil, and its methods do nothing.
func (c *Client) watchHeartbeat(ctx context.Context, silent func(), header http.Header, body io.Reader) (io.Reader, *watchdog) {
	beat := c.heartbeat()
	if ms, err := strconv.ParseInt(header.Get(heartbeatHeader), 10, 64); err == nil && ms > 0 {
		if ms > maxHeartbeatMs {
			return body, nil
		}
		c.beatMs.Store(ms)
		beat = time.Duration(ms) * time.Millisecond
	}
	d := silentBeats * beat
	w := &watchdog{ctx: ctx, body: body, d: d, t: time.AfterFunc(d, silent)}
	return w, w
}

type watchdog struct {
	ctx  context.Context
	body io.Reader
	d    time.Duration
	t    *time.Timer
}

func (w *watchdog) Read(p []byte) (int, error) {
	n, err := w.body.Read(p)
	if n > 0 {
		w.t.Reset(w.d)
	}
	if err != nil && errors.Is(context.Cause(w.ctx), errSilent) {
		err = errSilent
	}
	return n, err
}

// pause stops the watch while the stream's reader is busy elsewhere (a
// consumer handling an event): what arrives meanwhile waits unread, and
// is no silence of the stream's. resume watches again from now. Both are
// called from the goroutine that reads.
func (w *watchdog) pause() {
	if w != nil {
		w.t.Stop()
	}
}

func (w *watchdog) resume() {
	if w != nil {
		w.t.Reset(w.d)
	}
}

// stop ends the watch.
func (w *watchdog) stop() {
	if w != nil {
		w.t.Stop()
	}
}
