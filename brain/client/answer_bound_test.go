package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestHugeAnswerIsBounded has a server answer 200 with a JSON body far
// larger than the client's bound that then stalls, as a misbehaving
// server or proxy may: each call fails with ErrAnswerTooLarge once the
// bound is read, instead of reading (and holding in memory) whatever
// comes until ctx ends. A keyed write so answered was carried out: it is
// not sent again and is no UncertainError.
func TestHugeAnswerIsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const bound = 1 << 20
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/transcript") {
			// A length announced up front that exceeds the bound.
			w.Header().Set("Content-Length", "1073741824")
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"sessions":[`)
		item := []byte(`{"session_id":"ses_aaaaaaaaaaaaaaaaaaaa","status":"idle","last_sequence":3},`)
		for n := 0; n < 8*bound && r.Context().Err() == nil; n += len(item) {
			if _, err := w.Write(item); err != nil {
				return
			}
		}
		<-r.Context().Done() // stalls: the body never ends
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, &client.Options{MaxAnswerBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")
	calls := map[string]func() error{
		"List":       func() error { _, err := c.Sessions.List(ctx); return err },
		"Refresh":    func() error { _, err := s.Refresh(ctx); return err },
		"Transcript": func() error { _, err := s.Transcript(ctx); return err },
		"Create": func() error {
			_, err := c.Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "demo"}})
			return err
		},
	}
	for name, call := range calls {
		posts.Store(0)
		err := call()
		if ctx.Err() != nil {
			t.Fatalf("%s: failed only when ctx ended: %.300v", name, err)
		}
		if !errors.Is(err, client.ErrAnswerTooLarge) {
			t.Fatalf("%s: %.300v, want client.ErrAnswerTooLarge", name, err)
		}
		if n := len(err.Error()); n > 1024 {
			t.Fatalf("%s: error of %d bytes", name, n)
		}
		var ue *client.UncertainError
		if errors.As(err, &ue) {
			t.Fatalf("%s: %v, want no UncertainError (the server answered)", name, err)
		}
		if name == "Create" && posts.Load() != 1 {
			t.Fatalf("Create answered too large was sent %d times, want once", posts.Load())
		}
	}
}
