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

// TestForeignErrorCodeIsNotBrains: a cloud gateway's own error JSON has a
// "code" field too ({"code":"InternalError",...}). Its code is none of
// Brain's closed set, so the answer is a gateway's in Brain's stead: a
// keyed write so answered is sent again with its key and fails with an
// UncertainError saying the answer is not Brain's, not with the
// gateway's code as if Brain had refused the call. An answer with one of
// Brain's codes (a turn's failure code among them) stays Brain's.
func TestForeignErrorCodeIsNotBrains(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var body atomic.Value
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, body.Load().(string))
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")

	body.Store(`{"code":"InternalError","message":"We encountered an internal error. Please try again."}`)
	err = s.Interrupt(ctx, client.IdempotencyKey("cancel-1"))
	var ue *client.UncertainError
	if !errors.As(err, &ue) || ue.Key != "cancel-1" {
		t.Fatalf("interrupt answered a gateway's error JSON: %v, want an UncertainError with its key", err)
	}
	var ae *api.ApiError
	if !errors.As(err, &ae) || ae.Code != api.CodeInternal || !strings.Contains(err.Error(), "not answered by Brain") {
		t.Fatalf("interrupt answered a gateway's error JSON: %v, want an internal error saying it is not Brain's", err)
	}
	if n := hits.Load(); n != 3 {
		t.Fatalf("interrupt answered a gateway's error JSON was sent %d times, want 3 (sent again with its key)", n)
	}

	// Brain's own answer of a turn that failed: its failure code.
	hits.Store(0)
	body.Store(`{"code":"tool_error","message":"the tool failed","retryable":false}`)
	_, err = s.Send(context.Background(), api.UserInput{Message: "hi"}, client.IdempotencyKey("send-1"))
	if errors.As(err, &ue) || !errors.As(err, &ae) || ae.Code != api.FailureToolError {
		t.Fatalf("send answered Brain's failed turn: %v, want the ApiError tool_error", err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("send answered Brain's failed turn was sent %d times, want once", n)
	}
}
