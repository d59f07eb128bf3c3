package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestFrameIDOtherThanSequenceIsMalformed: Brain marks each recorded
// frame of a followed stream with its event's sequence as the id. A
// frame whose id names another sequence than its data (something between
// Brain and the client mixed frames up) is not taken on trust: the
// events before it are yielded, it is not, and the stream ends with
// ErrMalformedEvent without connecting again (the same bytes would come
// again).
func TestFrameIDOtherThanSequenceIsMalformed(t *testing.T) {
	for name, frame := range map[string]string{
		"id ahead of data":  "id: 5\nevent: turn_started\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
		"id behind data":    "id: 2\nevent: turn_started\ndata: {\"sequence\":9,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
		"id not a sequence": "id: abc\nevent: turn_started\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			var streams atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Accept") != "text/event-stream" {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"session_id":"ses_aaaaaaaaaaaaaaaaaaaa","status":"running","last_sequence":9}`)
					return
				}
				streams.Add(1)
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Cache-Control", "no-cache")
				w.Header().Set("Brain-Heartbeat-Ms", "15000")
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, "id: 1\nevent: session_creation_started\ndata: {\"sequence\":1,\"recorded_at_ms\":1700000000000,\"event_type\":\"session_creation_started\",\"data\":{}}\n\n"+
					"event: model_output\ndata: {\"model_call_sequence\":1,\"text\":\"hi\"}\n\n"+
					frame)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}))
			defer srv.Close()
			c, err := client.New(srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var got []uint64
			var failed error
			for ev, err := range c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa").Events(ctx, 0, client.Follow()) {
				if err != nil {
					failed = err
					break
				}
				if ev.Sequence != 0 {
					got = append(got, ev.Sequence)
				}
			}
			if !errors.Is(failed, client.ErrMalformedEvent) {
				t.Fatalf("stream with the frame %q: error %v, want ErrMalformedEvent", frame, failed)
			}
			if len(got) != 1 || got[0] != 1 {
				t.Fatalf("stream with the frame %q yielded the events %v, want only 1", frame, got)
			}
			if n := streams.Load(); n != 1 {
				t.Fatalf("stream with the frame %q connected %d times, want once", frame, n)
			}
			var ae *api.ApiError
			if errors.As(failed, &ae) {
				t.Fatalf("stream with the frame %q: error %v taken for Brain's answer", frame, failed)
			}
		})
	}
}
