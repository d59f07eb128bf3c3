package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestErrorsHideEchoedTokens: a server or a proxy whose error answer
// quotes the request's Authorization header (a debugging proxy's page, a
// gateway that names the credential it refused) does not put the
// client's token, or a host's, into the error the caller prints or logs:
// neither the error's text nor the *api.ApiError's message and details
// hold it.
func TestErrorsHideEchoedTokens(t *testing.T) {
	const token = "s3cret-operator-token-0123456789"
	const hostToken = "s3cret-host-token-9876543210"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch {
		case strings.HasSuffix(r.URL.Path, "/events") && r.Method == http.MethodGet:
			// A proxy's page in the server's stead.
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "<html>refused credentials %q</html>", auth)
		case strings.HasPrefix(r.URL.Path, "/v1/hosts/"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			b, _ := json.Marshal(api.ApiError{Code: api.CodeInternal, Message: "refused " + auth,
				Details: json.RawMessage(`{"authorization":"` + auth + `"}`)})
			w.Write(b)
		default:
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "upstream failed; request headers: Authorization: %s", auth)
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, &Options{Token: token, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		for _, secret := range []string{token, hostToken} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error prints a token: %v", what, err)
			}
			var ae *api.ApiError
			if errors.As(err, &ae) && (strings.Contains(ae.Message, secret) || strings.Contains(string(ae.Details), secret)) {
				t.Errorf("%s: the ApiError holds a token: %+v", what, ae)
			}
		}
	}
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")
	_, err = s.Refresh(ctx)
	check("read", err)
	_, err = s.End(ctx)
	check("write", err)
	for _, err := range s.Events(ctx, 0, Follow()) {
		check("follow", err)
	}
	h, err := c.ResumeHost(api.HostRegistration{HostID: "host_aaaaaaaaaaaaaaaaaaaa", Token: hostToken})
	if err != nil {
		t.Fatal(err)
	}
	tc := &ToolCall{h: h, SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Sequence: 7, Name: "tool"}
	_, err = tc.Model(ctx, api.ModelRequest{})
	check("host model call", err)
	_, err = tc.Emit(ctx, "e", nil)
	check("host emit", err)
	cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer ccancel()
	check("host connection", h.Connected(cctx))
}
