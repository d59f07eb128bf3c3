package envsdk_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// Once Serve returned, the provider keeps no connection to Brain open: the
// callback connections its handler opened (to finish a result) are
// closed, not left idle with their goroutines until the transport's idle
// timeout.
func TestServeClosesCallbackConnections(t *testing.T) {
	closed := make(chan struct{}, 16)
	opened := make(chan struct{}, 16)
	brain := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(101)
	}))
	brain.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			opened <- struct{}{}
		case http.StateClosed:
			closed <- struct{}{}
		}
	}
	brain.Start()
	t.Cleanup(brain.Close)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() {
		served <- envsdk.Serve(ctx, ln, envsdk.NewHandler(greeter{}, &envsdk.Options{Token: token}))
	}()

	grant := &envapi.Grant{URL: brain.URL + "/call", Token: "cb", Methods: envapi.ToolMethods()}
	cmd := envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID: "ses_1", Environment: "env", Sequence: 2,
		Request: envapi.Execute(json.RawMessage(`"greet"`), json.RawMessage(`{"name":"Ada"}`), nil, grant),
	}}
	_, body, resp, err := envtest.Post(context.Background(), nil, "http://"+ln.Addr().String(), token, cmd)
	if err != nil || resp == nil || resp.Receipt.Type != envapi.ReceiptResult {
		t.Fatalf("execute answered %s, %v; want a result", body, err)
	}
	<-opened // the finish's connection

	stop()
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the callback connection is still open 5s after Serve returned")
	}
}
