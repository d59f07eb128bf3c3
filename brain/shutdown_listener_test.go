package brain_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
)

// TestCloseKeepsToDeadlineWithRequestInFlight: a request whose body never
// finishes arriving holds its connection active. Close given one second
// stops the listeners within about that second, cutting the connection,
// rather than waiting a fixed bound for it.
func TestCloseKeepsToDeadlineWithRequestInFlight(t *testing.T) {
	srv, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), Token: "t0ken"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The server asks for the body once the handler reads it: the
	// request is then in flight, its connection active.
	fmt.Fprintf(conn, "POST /v1/sessions HTTP/1.1\r\nHost: brain\r\nAuthorization: Bearer t0ken\r\nIdempotency-Key: k1\r\nContent-Type: application/json\r\n"+
		"Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("answer to a request expecting 100-continue = %v %s, %v", resp.Status, b, err)
	}
	fmt.Fprintf(conn, `{"model":`) // and nothing more

	const grant = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grant)
	defer cancel()
	start := time.Now()
	srv.Close(ctx)
	if took := time.Since(start); took > grant+time.Second {
		t.Errorf("Close given %v took %v with a request in flight", grant, took)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	// The connection was cut: reading it ends.
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString(0); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("the in-flight request's connection stays open after Close: %v", err)
	}
}
