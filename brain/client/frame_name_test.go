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

// TestFrameNameOtherThanEventTypeIsMalformed: Brain names each recorded
// frame of a followed stream with its event's type. A frame whose name
// is another type than its data's, or that has no name, is not taken on
// trust (a terminal event named as an ordinary one, or the reverse,
// would end a follower's stream early or never): the events before it
// are yielded, it is not, and the stream ends with ErrMalformedEvent
// without connecting again.
func TestFrameNameOtherThanEventTypeIsMalformed(t *testing.T) {
	for name, frame := range map[string]string{
		"name of another type": "id: 2\nevent: turn_started\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"session_ended\",\"data\":{}}\n\n",
		"terminal name":        "id: 2\nevent: session_ended\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
		"no name":              "id: 2\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
		"name of other case":   "id: 2\nevent: Turn_Started\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"turn_started\",\"data\":{}}\n\n",
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
				w.Header().Set("Brain-Heartbeat-Ms", "15000")
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, "id: 1\nevent: session_creation_started\ndata: {\"sequence\":1,\"recorded_at_ms\":1700000000000,\"event_type\":\"session_creation_started\",\"data\":{}}\n\n"+
					frame+
					"id: 3\nevent: turn_ended\ndata: {\"sequence\":3,\"recorded_at_ms\":1700000000002,\"event_type\":\"turn_ended\",\"data\":{}}\n\n")
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
			var got []api.Event
			var failed error
			for ev, err := range c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa").Events(ctx, 0, client.Follow()) {
				if err != nil {
					failed = err
					break
				}
				got = append(got, ev)
			}
			if !errors.Is(failed, client.ErrMalformedEvent) {
				t.Fatalf("stream with the frame %q: error %v, want ErrMalformedEvent", frame, failed)
			}
			if len(got) != 1 || got[0].Sequence != 1 {
				t.Fatalf("stream with the frame %q yielded %+v, want only event 1", frame, got)
			}
			if n := streams.Load(); n != 1 {
				t.Fatalf("stream with the frame %q connected %d times, want once", frame, n)
			}
		})
	}
}
