package envsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// finisher answers returned and finishes its Tool in the background once
// release is closed.
type finisher struct {
	Base
	release chan struct{}
	done    chan error
}

func (f *finisher) Execute(_ *Ctx, x *Execution) (envapi.Receipt, error) {
	go func() {
		<-f.release
		ctx, cancel := context.WithDeadline(context.Background(), x.Deadline)
		defer cancel()
		out := envapi.OK(json.RawMessage(`"done"`))
		_, err := x.Invocation.Finish(ctx, &out)
		f.done <- err
	}()
	return envapi.Returned(nil), nil
}

// serveFinisher serves a finisher until the returned stop is called; the
// channel answers what Serve returned. finishes counts the finish calls
// its callback grant received.
func serveFinisher(t *testing.T) (p *finisher, url string, grant *envapi.Grant, finishes *atomic.Int64, stop func(), served chan error) {
	t.Helper()
	finishes = &atomic.Int64{}
	brain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		finishes.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("101"))
	}))
	t.Cleanup(brain.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p = &finisher{release: make(chan struct{}), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	served = make(chan error, 1)
	go func() { served <- Serve(ctx, ln, NewHandler(p, &Options{Token: "t"})) }()
	return p, "http://" + ln.Addr().String(), &envapi.Grant{URL: brain.URL, Token: "cb", Methods: envapi.ToolMethods()}, finishes, cancel, served
}

func postReturned(t *testing.T, url string, grant *envapi.Grant) {
	t.Helper()
	ms := int64(60_000)
	body, _ := json.Marshal(envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID: "s1", Environment: "box", Sequence: 3,
		Request: envapi.Execute(json.RawMessage(`"bg"`), json.RawMessage(`{}`), &ms, grant),
	}})
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/operations", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if r, err := envapi.DecodeResponse(data); err != nil || r.Receipt.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %s (%v), want returned", data, err)
	}
}

// A Tool that answered returned is still running until it finishes: a
// graceful stop waits for its finish, so a provider that stops right
// after the answer does not drop the Tool's outcome.
func TestServeWaitsForReturnedTools(t *testing.T) {
	p, url, grant, finishes, stop, served := serveFinisher(t)
	postReturned(t, url, grant)
	stop()
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) while a Tool that answered returned had not finished", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(p.release)
	if err := <-p.done; err != nil {
		t.Fatalf("finish during the graceful stop: %v", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve answered %v after every Tool finished", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return once the Tool finished")
	}
	if n := finishes.Load(); n != 1 {
		t.Fatalf("finish sent %d times, want 1", n)
	}
}

// The wait is bounded by the shutdown grace: a Tool that has not finished
// by then is left, and Serve says so.
func TestServeStopsWaitingForReturnedToolsAfterGrace(t *testing.T) {
	old := shutdownGrace
	shutdownGrace = 200 * time.Millisecond
	t.Cleanup(func() { shutdownGrace = old })
	p, url, grant, _, stop, served := serveFinisher(t)
	postReturned(t, url, grant)
	stop()
	select {
	case err := <-served:
		if err == nil {
			t.Fatal("Serve left a Tool unfinished and answered nil")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	close(p.release)
	<-p.done
}

// ctxWorker answers returned and works in the background until the
// Tool's work context ends, sending its cause.
type ctxWorker struct {
	Base
	ended chan error
}

func (w *ctxWorker) Execute(_ *Ctx, x *Execution) (envapi.Receipt, error) {
	go func() {
		<-x.Context().Done()
		w.ended <- context.Cause(x.Context())
	}()
	return envapi.Returned(nil), nil
}

// At the end of its grace a graceful stop ends the work context of every
// Tool that answered returned and has not finished: nothing a Tool does
// in the background outlives Serve unknowingly.
func TestServeStopsReturnedToolsAtEndOfGrace(t *testing.T) {
	old := shutdownGrace
	shutdownGrace = 200 * time.Millisecond
	t.Cleanup(func() { shutdownGrace = old })
	brain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("101")) }))
	t.Cleanup(brain.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &ctxWorker{ended: make(chan error, 1)}
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, NewHandler(w, &Options{Token: "t"})) }()
	postReturned(t, "http://"+ln.Addr().String(), &envapi.Grant{URL: brain.URL, Token: "cb", Methods: envapi.ToolMethods()})
	select {
	case cause := <-w.ended:
		t.Fatalf("the Tool's work context ended (%v) before the server stopped", cause)
	default:
	}
	stop()
	select {
	case err := <-served:
		if err == nil {
			t.Fatal("Serve stopped a Tool that had not finished and answered nil")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	select {
	case cause := <-w.ended:
		if !errors.Is(cause, errShutdown) {
			t.Errorf("the Tool's work context ended with %v, want the server's stop", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Tool's work context did not end when Serve gave up on it")
	}
}
