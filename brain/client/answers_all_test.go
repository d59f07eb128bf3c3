package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestOKToEverythingIsNotBrain: a base URL at something that answers 200
// to every request (a proxy that does not pass calls on, a static site)
// does not make a delete, an interrupt or a health probe look
// successful: Brain answers them 204. Nor is its page taken for a keyed
// write's answer that is not Brain's (a session's summary, a sequence).
// The keyed writes fail with an UncertainError carrying their key (the
// call may or may not have reached Brain), and every error says the
// answer is not Brain's.
func TestOKToEverythingIsNotBrain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body>Welcome</body></html>")
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")

	notBrains := func(what string, err error) {
		t.Helper()
		var ae *api.ApiError
		if err == nil || !errors.As(err, &ae) || !strings.Contains(err.Error(), "not answered by Brain") {
			t.Fatalf("%s answered 200 by something other than Brain: %v, want an error saying the answer is not Brain's", what, err)
		}
	}
	uncertain := func(what, key string, err error) {
		t.Helper()
		notBrains(what, err)
		var ue *client.UncertainError
		if !errors.As(err, &ue) || ue.Key != key {
			t.Fatalf("%s answered 200 by something other than Brain: %v, want an UncertainError with key %q", what, err, key)
		}
	}
	uncertain("Delete", "del-1", s.Delete(ctx, client.IdempotencyKey("del-1")))
	uncertain("Interrupt", "cancel-1", s.Interrupt(ctx, client.IdempotencyKey("cancel-1")))
	_, err = c.Sessions.Create(ctx, api.CreateSessionRequest{System: "s"}, client.IdempotencyKey("create-1"))
	uncertain("Create", "create-1", err)
	_, err = s.End(ctx, client.IdempotencyKey("end-1"))
	uncertain("End", "end-1", err)
	_, err = s.Send(context.Background(), api.UserInput{Message: "hi"}, client.IdempotencyKey("send-1"))
	uncertain("Send", "send-1", err)
	_, err = s.Submit(ctx, api.UserInput{Message: "hi"}, client.IdempotencyKey("submit-1"))
	uncertain("Submit", "submit-1", err)
	_, err = s.CallMethod(ctx, "workspace", "read", nil, client.IdempotencyKey("call-1"))
	uncertain("CallMethod", "call-1", err)
	_, err = s.ListEnvironments(ctx, client.IdempotencyKey("control-1"))
	uncertain("ListEnvironments", "control-1", err)
	_, err = c.Agentloops.Upload(ctx, []byte("\x00asm"), client.IdempotencyKey("upload-1"))
	uncertain("Agentloops.Upload", "upload-1", err)
	notBrains("Live", c.Live(ctx))
	notBrains("Ready", c.Ready(ctx))
}
