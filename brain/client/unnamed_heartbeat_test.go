package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// assumeHeartbeat makes d the interval assumed of a server that named
// none, for the test.
func assumeHeartbeat(t *testing.T, d time.Duration) {
	old := defaultHeartbeat
	defaultHeartbeat = d
	t.Cleanup(func() { defaultHeartbeat = old })
}

// unnamedHeartbeatServer serves the events of a session of three as a
// server that names no heartbeat interval on its streams would (an older
// Brain, or one behind a proxy that drops the header), save for the
// first stream, which names named when it is not empty. Each stream
// sends the event after its cursor; the stream of event 2 then goes
// silent without closing, as a connection a NAT dropped does. Event 3
// ends the session. streams counts the streams.
func unnamedHeartbeatServer(t *testing.T, named string) (srv *httptest.Server, streams *atomic.Int32) {
	t.Helper()
	streams = new(atomic.Int32)
	done := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" {
			_, _ = w.Write([]byte(`{"session_id":"ses_x","status":"running","last_sequence":3}`))
			return
		}
		if streams.Add(1) == 1 && named != "" {
			w.Header().Set(heartbeatHeader, named)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		seq, kind := after+1, api.KindTurnStarted
		if seq == 3 {
			kind = api.KindSessionEnded
		}
		fmt.Fprintf(w, "id: %d\nevent: %s\ndata: {\"sequence\":%d,\"event_type\":%q,\"data\":{}}\n\n", seq, kind, seq, kind)
		w.(http.Flusher).Flush()
		if seq == 2 {
			select { // silent, and never closed by the server
			case <-r.Context().Done():
			case <-done:
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) })
	return srv, streams
}

// TestFollowWatchesStreamWithoutHeartbeatHeader follows a session whose
// streams name no heartbeat interval, over a stream that goes silent
// without closing. The stream is watched all the same, with the interval
// the client assumes (the one a stream of the server named last, or
// Brain's default before any did): Follow connects again from its cursor
// and yields the rest of the session, instead of waiting for ever.
func TestFollowWatchesStreamWithoutHeartbeatHeader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		named   string        // the interval the first stream names
		assumed time.Duration // the interval assumed before any is named
	}{
		{"no stream named one", "", 100 * time.Millisecond},
		{"an earlier stream named one", "100", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assumeHeartbeat(t, tc.assumed)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv, streams := unnamedHeartbeatServer(t, tc.named)
			c, err := New(srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var seqs []uint64
			for ev, err := range c.Sessions.Open("ses_x").Events(ctx, 0, Follow()) {
				if err != nil {
					t.Fatalf("after events %v over %d streams: %v", seqs, streams.Load(), err)
				}
				seqs = append(seqs, ev.Sequence)
			}
			if !slices.Equal(seqs, []uint64{1, 2, 3}) || streams.Load() != 3 {
				t.Fatalf("events %v over %d streams, want 1, 2 and 3 over 3", seqs, streams.Load())
			}
		})
	}
}

// TestHostWatchesConnectionWithoutHeartbeatHeader serves a host over
// commands connections that name no heartbeat interval and go silent
// without closing: the host takes one for dropped after three of the
// intervals it assumes, and connects again.
func TestHostWatchesConnectionWithoutHeartbeatHeader(t *testing.T) {
	assumeHeartbeat(t, 100*time.Millisecond)
	srv, connections := fakeHostServer(t, nil, http.NotFound)
	c, h := resumeFakeHost(t, srv.URL, 0)
	// The host stops reading the interval before the test restores it.
	t.Cleanup(func() { c.Close(); <-h.stopped })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	for connections.Load() < 3 {
		select {
		case <-ctx.Done():
			t.Fatalf("%d commands connections in 5 s of a silent one, want it connected again", connections.Load())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
