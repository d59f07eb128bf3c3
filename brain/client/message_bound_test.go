package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestLongErrorMessageIsCut: Brain's error messages are at most 4096
// bytes long. An error answer in Brain's form whose message is megabytes
// long (something in Brain's stead) still answers its code to errors.Is,
// but the error a caller prints or logs holds only the message's start.
func TestLongErrorMessageIsCut(t *testing.T) {
	long := strings.Repeat("m", 4<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, `{"code":"conflict","message":"%s","retryable":false}`, long)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, &client.Options{Token: "tok", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")
	_, err = s.End(ctx)
	var ae *api.ApiError
	if !errors.Is(err, api.ErrConflict) || !errors.As(err, &ae) {
		t.Fatalf("err = %.200v, want a conflict", err)
	}
	if n := len(err.Error()); n > 8<<10 || len(ae.Message) > 8<<10 {
		t.Fatalf("the error is %d bytes long, its message %d", n, len(ae.Message))
	}
	if !strings.HasPrefix(ae.Message, "mmmm") {
		t.Fatalf("message %.100q: the start of the answer's message is lost", ae.Message)
	}
	for _, err := range s.Events(ctx, 0, client.Follow()) {
		if !errors.Is(err, api.ErrConflict) || len(err.Error()) > 8<<10 {
			t.Fatalf("follow: err of %d bytes: %.200v, want a short conflict", len(err.Error()), err)
		}
	}
}
