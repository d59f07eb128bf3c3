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

// maxHeartbeatMs bounds the intervals watched: a longer one (a day) is
// taken for no heartbeat at all.
const maxHeartbeatMs = 24 * 60 * 60 * 1000

// errSilent reports a stream on which nothing arrived, not even a
// heartbeat comment, for silentBeats heartbeat intervals.
var errSilent = errors.New("client: stream went silent")

// watchHeartbeat answers a reader of body that fails with errSilent once
// nothing arrived for silentBeats of the heartbeat intervals header names,
// by cancelling cancel (the stream's request context, which unblocks a
// pending read), and the watchdog, whose stop ends the watch. A response
// without the header is not watched: the watchdog is nil, and its methods
// do nothing.
func watchHeartbeat(ctx context.Context, cancel context.CancelCauseFunc, header http.Header, body io.Reader) (io.Reader, *watchdog) {
	ms, err := strconv.ParseInt(header.Get(heartbeatHeader), 10, 64)
	if err != nil || ms <= 0 || ms > maxHeartbeatMs {
		return body, nil
	}
	d := silentBeats * time.Duration(ms) * time.Millisecond
	w := &watchdog{ctx: ctx, body: body, d: d, t: time.AfterFunc(d, func() { cancel(errSilent) })}
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
