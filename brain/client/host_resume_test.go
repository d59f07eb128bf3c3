package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestResumeHostDoesNotWaitForARegistration: ResumeHost takes no ctx and
// sends nothing, so it must not wait for a Host registration under way
// (whose POST may take as long as its own ctx allows): it fails at once,
// as it does once the client has a host.
func TestResumeHostDoesNotWaitForARegistration(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/hosts" {
			close(arrived)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"host_id":"host_bbbbbbbbbbbbbbbbbbbb","token":"t"}`))
			return
		}
		if strings.HasSuffix(r.URL.Path, "/commands") {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer hs.Close()
	c, err := New(hs.URL, &Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	registered := make(chan error, 1)
	go func() {
		_, err := c.Host(context.Background())
		registered <- err
	}()
	<-arrived
	resumed := make(chan error, 1)
	go func() {
		_, err := c.ResumeHost(api.HostRegistration{HostID: "host_aaaaaaaaaaaaaaaaaaaa", Token: "host-token"})
		resumed <- err
	}()
	select {
	case err := <-resumed:
		if !errors.Is(err, ErrHostRegistering) {
			t.Fatalf("ResumeHost while a registration was under way: %v, want ErrHostRegistering", err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("ResumeHost waited for a registration under way")
	}
	close(release)
	if err := <-registered; err != nil {
		t.Fatalf("the registration under way: %v", err)
	}
	if c.host == nil || c.host.ID != "host_bbbbbbbbbbbbbbbbbbbb" {
		t.Fatal("the registration under way did not set the client's host")
	}
}
