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

// TestProxyAnswersWithoutAnApiError: an error answer whose body is empty
// or not an ApiError (a proxy's page) reaches the caller of a read, of a
// keyed write and of a followed stream as an *api.ApiError of its
// status's code, which errors.Is tells against the errors of package api.
func TestProxyAnswersWithoutAnApiError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		status    int
		want      error
		retryable bool
	}{
		{http.StatusBadRequest, api.ErrInvalidRequest, false},
		{http.StatusUnauthorized, api.ErrUnauthorized, false},
		{http.StatusNotFound, api.ErrNotFound, false},
		{http.StatusMethodNotAllowed, api.ErrInvalidRequest, false},
		{http.StatusRequestTimeout, api.ErrInternal, true},
		{http.StatusConflict, api.ErrConflict, false},
		{http.StatusGone, api.ErrNotFound, false},
		{http.StatusRequestEntityTooLarge, api.ErrInvalidRequest, false},
		{http.StatusUnsupportedMediaType, api.ErrInvalidRequest, false},
		{http.StatusUnprocessableEntity, api.ErrInvalidRequest, false},
		{http.StatusInternalServerError, api.ErrInternal, true},
		{http.StatusBadGateway, api.ErrInternal, true},
		{http.StatusServiceUnavailable, api.ErrOverloaded, true},
		{http.StatusGatewayTimeout, api.ErrInternal, true},
		// A CDN's answers when the origin answered nothing it could
		// relay (520), was down (521), did not take the connection
		// (522), was unreachable (523) or did not answer in time (524).
		{520, api.ErrInternal, true},
		{521, api.ErrInternal, true},
		{522, api.ErrInternal, true},
		{523, api.ErrInternal, true},
		{524, api.ErrInternal, true},
	} {
		for _, body := range []string{"", "<html><body>" + http.StatusText(tc.status) + "</body></html>"} {
			t.Run(fmt.Sprintf("%d/%d-bytes", tc.status, len(body)), func(t *testing.T) {
				hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if body != "" {
						w.Header().Set("Content-Type", "text/html")
					}
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(body))
				}))
				defer hs.Close()
				c, err := client.New(hs.URL, &client.Options{Token: "tok", Retries: -1})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				check := func(call string, err error) {
					t.Helper()
					var ae *api.ApiError
					if !errors.As(err, &ae) || !errors.Is(err, tc.want) || ae.Retryable != tc.retryable || !strings.Contains(ae.Message, "not answered by Brain") {
						t.Errorf("%s answered %d with %q: %v, want %v (retryable %v) saying it is not Brain's", call, tc.status, body, err, tc.want, tc.retryable)
					}
				}
				s := c.Sessions.Open("ses_AAAAAAAAAAAAAAAAAAAA")
				_, err = s.Refresh(ctx)
				check("Refresh", err)
				_, err = s.End(ctx)
				check("End", err)
				// A followed stream tries a retryable answer again until
				// its ctx ends, and then yields it with ctx's error.
				fctx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
				defer stop()
				for _, err := range s.Events(fctx, 0, client.Follow()) {
					check("Follow", err)
				}
			})
		}
	}
}
