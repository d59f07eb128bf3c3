package envsdk_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// transferBound is the bound the tests give Serve for reading a body and
// writing an answer.
const transferBound = 500 * time.Millisecond

// serveOn serves h with envsdk.Serve on a loopback port until the test
// ends, and returns its address.
func serveOn(t *testing.T, h http.Handler) string {
	t.Helper()
	t.Cleanup(envsdk.SetTransferTimeout(transferBound))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- envsdk.Serve(ctx, ln, h) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	return ln.Addr().String()
}

// greet executes greeter's Tool at seq and checks its answer.
func greet(t *testing.T, addr string, seq uint64) {
	t.Helper()
	cmd := envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID: "ses_1", Environment: "env", Sequence: seq,
		Request: envapi.Execute(json.RawMessage(`"greet"`), json.RawMessage(`{"name":"Ada"}`), nil, nil),
	}}
	_, body, resp, err := envtest.Post(context.Background(), nil, "http://"+addr, token, cmd)
	if err != nil || resp == nil || resp.Receipt.Type != envapi.ReceiptResult {
		t.Fatalf("execute %d answered %s, %v; want a result", seq, body, err)
	}
}

// A client that sends its body a byte at a time is cut off once the
// bound passes; it does not hold its connection for as long as it keeps
// trickling, and others are served meanwhile.
func TestServeClosesATrickledBody(t *testing.T) {
	addr := serveOn(t, envsdk.NewHandler(greeter{}, &envsdk.Options{Token: token}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/operations HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr, token)
	trickling := make(chan struct{})
	go func() {
		defer close(trickling)
		for time.Since(start) < 20*time.Second {
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	greet(t, addr, 1)

	// The server answers the request it gave up on, or not, and closes
	// the connection.
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, conn)
		closed <- time.Since(start)
	}()
	select {
	case took := <-closed:
		if took < transferBound {
			t.Errorf("the connection closed after %s, before the bound of %s", took, transferBound)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("a body trickled for 10s is still being read; the bound is %s", transferBound)
	}
	_ = conn.Close()
	<-trickling

	greet(t, addr, 2)
}

// The bound is for the wire, not for the work: an execute that runs well
// past it (after its body arrived whole) is answered, and so is the next
// request on the same connection.
func TestServeAnswersLongExecutes(t *testing.T) {
	p := &sleeper{for_: 4 * transferBound}
	addr := serveOn(t, envsdk.NewHandler(p, &envsdk.Options{Token: token}))
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for seq := uint64(1); seq <= 2; seq++ {
		cmd := envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
			SessionID: "ses_1", Environment: "env", Sequence: seq,
			Request: envapi.Execute(json.RawMessage(`"sleep"`), json.RawMessage(`{}`), nil, nil),
		}}
		_, body, resp, err := envtest.Post(context.Background(), client, "http://"+addr, token, cmd)
		if err != nil || resp == nil || resp.Receipt.Type != envapi.ReceiptResult {
			t.Fatalf("execute %d running %s answered %s, %v; want a result", seq, p.for_, body, err)
		}
	}
}

// sleeper's Tool takes for_ and answers a result, unless its operation
// ended first.
type sleeper struct {
	envsdk.Base
	for_ time.Duration
}

func (s *sleeper) Execute(c *envsdk.Ctx, _ *envsdk.Execution) (envapi.Receipt, error) {
	select {
	case <-time.After(s.for_):
		return envsdk.Output("slept")
	case <-c.Context().Done():
		return envapi.Receipt{}, context.Cause(c.Context())
	}
}

// A client that never reads its answer does not hold the server's
// goroutine writing it beyond the bound: the write gives up, and the
// client, reading at last, finds the answer cut short.
func TestServeGivesUpAnAnswerNobodyReads(t *testing.T) {
	const size = 64 << 20 // far more than the sockets' buffers hold
	gaveUp := make(chan time.Duration, 1)
	addr := serveOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", strconv.Itoa(size))
		start := time.Now()
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
		gaveUp <- time.Since(start)
	}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(64 << 10)
	}
	fmt.Fprintf(conn, "POST /v1/operations HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\n{}", addr)

	select {
	case took := <-gaveUp:
		if took < transferBound {
			t.Errorf("the answer was given up after %s, before the bound of %s", took, transferBound)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the answer to a client that does not read is still being written after 10s; the bound is %s", transferBound)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read the answer's head: %v", err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil || n >= resp.ContentLength {
		t.Errorf("read %d of %d bytes of the answer (%v); want it cut short", n, resp.ContentLength, err)
	}
}
