package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/client"
)

// TestRepeatedPageIsMalformed: a cache in front of Brain that ignores the
// query answers every events page with the first one. Events yields the
// first page's events once, then fails with ErrMalformedEvent rather than
// yield them again and end as if the session held no more.
func TestRepeatedPageIsMalformed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"events":[`+
			`{"sequence":1,"recorded_at_ms":1700000000000,"event_type":"session_creation_started","data":{}},`+
			`{"sequence":2,"recorded_at_ms":1700000000001,"event_type":"session_creation_ended","data":{}}],"next_cursor":2}`)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, &client.Options{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var seqs []uint64
	var failed error
	for ev, err := range c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa").Events(ctx, 0) {
		if err != nil {
			failed = err
			break
		}
		seqs = append(seqs, ev.Sequence)
	}
	if len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 {
		t.Errorf("yielded the events %v, want 1 and 2 once each", seqs)
	}
	if !errors.Is(failed, client.ErrMalformedEvent) {
		t.Errorf("ended with %v, want ErrMalformedEvent", failed)
	}
}
