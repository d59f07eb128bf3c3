package hosts

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// tcpHost is a host whose commands connection is a real loopback TCP
// connection: the transport writes every frame it takes to the socket,
// reports the write and ends the connection when it failed, as the HTTP
// commands stream does.
type tcpHost struct {
	// frames receives the commands the host read.
	frames chan []byte
	client *net.TCPConn
	// gone is closed once Brain's side of the socket saw the host's side
	// reset: every later write to it fails.
	gone chan struct{}
}

func serveTCP(t *testing.T, conn *Conn) *tcpHost {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	h := &tcpHost{frames: make(chan []byte, 16), client: client, gone: make(chan struct{})}
	t.Cleanup(func() { client.Close(); server.Close() })
	// The host sends nothing on the stream: a read ends when its side
	// is gone.
	go func() {
		_, _ = io.Copy(io.Discard, server)
		close(h.gone)
	}()
	// The transport.
	go func() {
		defer conn.Close()
		for {
			select {
			case f := <-conn.Frames():
				_, err := server.Write(append(append([]byte(nil), f.Data...), '\n'))
				f.Wrote(err)
				if err != nil {
					return
				}
			case <-conn.Done():
				return
			}
		}
	}()
	// The host.
	go func() {
		sc := bufio.NewScanner(client)
		for sc.Scan() {
			h.frames <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	return h
}

// reset drops the host's side of the connection at once (a reset, not a
// graceful close) and waits until Brain's side saw it.
func (h *tcpHost) reset(t *testing.T) {
	t.Helper()
	if err := h.client.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	h.client.Close()
	select {
	case <-h.gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the reset never reached Brain's side")
	}
}

func (h *tcpHost) read(t *testing.T) api.HostCommand {
	t.Helper()
	select {
	case f := <-h.frames:
		var cmd api.HostCommand
		if err := json.Unmarshal(f, &cmd); err != nil {
			t.Fatal(err)
		}
		return cmd
	case <-time.After(10 * time.Second):
		t.Fatal("the host read no command")
	}
	return api.HostCommand{}
}

// noFrame checks that conn has nothing to write.
func noFrame(t *testing.T, conn *Conn) {
	t.Helper()
	select {
	case f := <-conn.Frames():
		t.Fatalf("the command was sent again: %s", f.Data)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestCommandWrittenToAResetConnectionIsUnknown: an invoke_tool command
// written to a connection whose host side is already gone (the write
// fails) may or may not have reached the host: the call's outcome is
// unknown (ErrHostLost), never host_not_connected, and the command is not
// sent again on the host's next connection.
func TestCommandWrittenToAResetConnectionIsUnknown(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	serveTCP(t, conn).reset(t)

	d := receipt(t, invoke(r, reg.HostID, 9))
	if !errors.Is(d.err, ErrHostLost) {
		t.Fatalf("command written to a reset connection: receipt %+v err %v, want ErrHostLost (outcome unknown)", d.rc, d.err)
	}
	second, err := r.Connect(reg.HostID)
	if err != nil {
		t.Fatal(err)
	}
	noFrame(t, second)
}

// TestCancelWrittenToAResetConnectionIsUnknown: a stopped call's
// cancel_tool command written to a connection whose host side is already
// gone may or may not have reached the host. Its cancel operation is
// answered unknown: not accepted (the host may never have read it), nor
// host_not_connected (its write was attempted), and it is not sent again
// on the host's next connection.
func TestCancelWrittenToAResetConnectionIsUnknown(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	host := serveTCP(t, conn)

	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	b := &backgroundCall{r: r, done: make(chan struct{}), cancel: cancel}
	op := session.Operation{
		Operation: envapi.Operation{
			SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Environment: "h", Sequence: 4,
			Request: envapi.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil, nil),
		},
		Declaration: api.Environment{Name: "h", Driver: api.DriverHost, HostID: reg.HostID},
		Execution:   b,
		Tool:        "t",
	}
	out := make(chan delivered, 1)
	go func() {
		rc, err := r.Deliver(ctx, op)
		out <- delivered{rc, err}
	}()
	if cmd := host.read(t); cmd.Operation.Type != api.HostInvokeTool || cmd.Sequence != 4 {
		t.Fatalf("the host read %+v, want invoke_tool 4", cmd)
	}
	if _, err := r.Update(context.Background(), reg.HostID, api.HostResult{SessionID: op.SessionID, Sequence: 4, Update: api.ToolExecutionUpdate{Type: api.UpdateReturned}}); err != nil {
		t.Fatal(err)
	}
	if d := receipt(t, out); d.err != nil || d.rc.Type != envapi.ReceiptReturned {
		t.Fatalf("receipt %+v err %v, want returned", d.rc, d.err)
	}
	b.stop()
	if n := held(t, r, reg.HostID); n != 1 {
		t.Fatalf("a stopped call: %d held, want 1 until its cancel operation", n)
	}

	host.reset(t)
	rc, err := r.Deliver(context.Background(), cancelOp(reg.HostID, 5, 4))
	if err != nil || rc.Type != envapi.ReceiptUnknown {
		t.Fatalf("cancel written to a reset connection: receipt %+v err %v, want unknown", rc, err)
	}
	second, err := r.Connect(reg.HostID)
	if err != nil {
		t.Fatal(err)
	}
	noFrame(t, second)
}
