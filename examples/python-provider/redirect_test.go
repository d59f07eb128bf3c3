package pythonprovider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestFinishNotRedirected: a callback answered with a redirect (to
// another origin here) is not followed, as Brain's own callback client
// follows none: the grant's token never reaches the other origin, whose
// answer is never taken for the finish's acknowledgement, and the finish
// is sent once; the execute answers unknown.
func TestFinishNotRedirected(t *testing.T) {
	url := startProvider(t, "provider.py")
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var elsewhere atomic.Int32
			var leaked atomic.Value
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				elsewhere.Add(1)
				if a := r.Header.Get("Authorization"); a != "" {
					leaked.Store(a)
				}
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, "7") // what a committed finish answers
			}))
			defer other.Close()
			var finishes atomic.Int32
			grantSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				finishes.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				http.Redirect(w, r, other.URL+"/finish", status)
			}))
			defer grantSrv.Close()
			cmds := envtest.NewCommands(fmt.Sprintf("redirected-%d", status), "box")
			ctx := context.Background()
			if _, _, resp, err := envtest.Post(ctx, nil, url, token, cmds.Setup(nil)); err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
				t.Fatalf("setup: %+v %v", resp, err)
			}
			grant := func(uint64) *envapi.Grant {
				return &envapi.Grant{URL: grantSrv.URL, Token: "tool-token", Methods: []string{envapi.MethodFinish}}
			}
			_, body, resp, err := envtest.Post(ctx, nil, url, token,
				cmds.ExecuteWith(json.RawMessage(`{"name":"echo"}`), json.RawMessage(`{"n":1}`), nil, grant))
			if a := leaked.Load(); a != nil {
				t.Errorf("the redirect's target received the grant's credentials %q", a)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("the redirect was followed: its target received %d requests", n)
			}
			if err != nil || resp.Receipt.Type != envapi.ReceiptUnknown {
				t.Fatalf("execute whose finish was answered %d: %s %v, want unknown", status, body, err)
			}
			if n := finishes.Load(); n != 1 {
				t.Errorf("finish sent %d times, want once", n)
			}
		})
	}
}
