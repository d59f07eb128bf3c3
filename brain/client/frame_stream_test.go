package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// followFrames follows the stream of a running session from a server
// that answers each stream request with the frames of body and then
// holds the stream open. It answers the events yielded, how many times
// the stream was connected, and the error the stream ended with. opts
// are added to Follow.
func followFrames(t *testing.T, body string, opts ...client.EventsOption) ([]api.Event, int32, error) {
	t.Helper()
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
		_, _ = io.WriteString(w, body)
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
	for ev, err := range c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa").Events(ctx, 0, append([]client.EventsOption{client.Follow()}, opts...)...) {
		if err != nil {
			failed = err
			break
		}
		got = append(got, ev)
	}
	return got, streams.Load(), failed
}
