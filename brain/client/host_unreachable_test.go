package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestHostConnectedNamesWhyItIsNot: while every commands connection is
// refused (here a proxy's 404 for a path it does not route), Connected
// ends with ctx and says why: the last attempt's answer, its code found
// by errors.As, with ctx's error found by errors.Is.
func TestHostConnectedNamesWhyItIsNot(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r)
	}))
	defer srv.Close()
	_, h := resumeFakeHost(t, srv.URL, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := h.Connected(ctx)
	var ae *api.ApiError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ae) || ae.Code != api.CodeNotFound {
		t.Fatalf("Connected while every connection is answered 404: %v, want the deadline and the not_found answer", err)
	}
}
