package envsdk

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// blocker runs until its operation's context ends.
type blocker struct {
	Base
	started chan struct{}
	stopped chan struct{}
}

func (b *blocker) Execute(c *Ctx, _ *Execution) (envapi.Receipt, error) {
	close(b.started)
	<-c.Context().Done()
	close(b.stopped)
	return envapi.Receipt{}, c.Context().Err()
}

// An operation still running when the shutdown grace is over is stopped:
// Serve does not return leaving it running with a live context.
func TestServeStopsOperationsLeftAfterGrace(t *testing.T) {
	old := shutdownGrace
	shutdownGrace = 200 * time.Millisecond
	t.Cleanup(func() { shutdownGrace = old })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blocker{started: make(chan struct{}), stopped: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, NewHandler(p, &Options{Token: "t"})) }()

	body := []byte(`{"contract":"environment/v1","operation":{"session_id":"s1","environment":"box","sequence":2,"request":{"type":"execute","implementation":"x","input":{}}}}`)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/operations", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-p.started
	stop()
	select {
	case err := <-served:
		if err == nil {
			t.Error("Serve cut a running operation and answered nil")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	select {
	case <-p.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the operation left running after Serve returned still has a live context")
	}
}
