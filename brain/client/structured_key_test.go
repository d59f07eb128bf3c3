package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestSendStructuredResumesWithItsKey: a SendStructured whose message
// Brain carried out but whose answer was lost fails with an
// UncertainError carrying the call's key (the caller's, or one the client
// chose); SendStructured again with StructuredKey(Key) answers the
// turn's value without sending the message a second time, also when the
// lost message was a correction.
func TestSendStructuredResumesWithItsKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	schema := json.RawMessage(pointSchema)
	messages := func(s *client.Session) int {
		tr, err := s.Transcript(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(tr.Messages)
	}
	uncertain := func(err error, want string) string {
		t.Helper()
		var ue *client.UncertainError
		if !errors.As(err, &ue) || ue.Key == "" || (want != "" && ue.Key != want) {
			t.Fatalf("SendStructured whose answer was lost = %v, want an UncertainError with the key %q", err, want)
		}
		return ue.Key
	}
	// Sync sends (a ctx that cannot be cancelled), as SendStructured's
	// doc asks.
	bg := context.WithoutCancel(ctx)

	for _, given := range []string{"", "structured-key-1"} {
		s, err := c.Sessions.Create(ctx, scripted)
		if err != nil {
			t.Fatal(err)
		}
		in := api.UserInput{Message: `{"reply":"{\"x\": 3}"}`}
		var opts []client.StructuredOption
		if given != "" {
			opts = append(opts, client.StructuredKey(given))
		}
		g.losing(keyed(http.MethodPost, "/messages", http.StatusBadGateway, ""))
		_, err = s.SendStructured(bg, in, schema, 0, opts...)
		key := uncertain(err, given)
		g.losing(nil)
		v, err := s.SendStructured(bg, in, schema, 0, client.StructuredKey(key))
		if err != nil || string(v) != `{"x": 3}` {
			t.Fatalf("SendStructured again with its key = %s, %v; want {\"x\": 3}", v, err)
		}
		if n := messages(s); n != 2 {
			t.Fatalf("%d messages after one message sent twice with one key, want 2", n)
		}
	}

	// The correction's answer is lost.
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	fix := client.Correction(func(int, error) api.UserInput { return api.UserInput{Message: `{"reply":"{\"x\": 4}"}`} })
	in := api.UserInput{Message: `{"reply":"{\"x\": \"four\"}"}`}
	var posts atomic.Int32
	g.losing(func(r *http.Request) (int, string, bool) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages") {
			return 0, "", false
		}
		return http.StatusBadGateway, "", posts.Add(1) > 1
	})
	_, err = s.SendStructured(bg, in, schema, 1, fix)
	key := uncertain(err, "")
	g.losing(nil)
	v, err := s.SendStructured(bg, in, schema, 1, fix, client.StructuredKey(key))
	if err != nil || string(v) != `{"x": 4}` {
		t.Fatalf("SendStructured again after a lost correction = %s, %v; want {\"x\": 4}", v, err)
	}
	if n := messages(s); n != 4 {
		t.Fatalf("%d messages after a message and its correction, each answered once, want 4", n)
	}
}
