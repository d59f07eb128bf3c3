package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// openCall is the service table of one open tool call: only its Done is
// used by a delivery that never reaches the host.
type openCall struct {
	session.Services
	done chan struct{}
}

func (o *openCall) Done() <-chan struct{} { return o.done }

type delivered struct {
	rc  envapi.Receipt
	err error
}

// invoke delivers the execute of tool call seq of session ses_… on host
// id and answers where its receipt arrives.
func invoke(r *Registry, id string, seq uint64) <-chan delivered {
	op := session.Operation{
		Operation: envapi.Operation{
			SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Environment: "h", Sequence: seq,
			Request: envapi.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil, nil),
		},
		Declaration: api.Environment{Name: "h", Driver: api.DriverHost, HostID: id},
		Execution:   &openCall{done: make(chan struct{})},
		Tool:        "t",
	}
	out := make(chan delivered, 1)
	go func() {
		rc, err := r.Deliver(context.Background(), op)
		out <- delivered{rc, err}
	}()
	return out
}

// waitQueued waits until n frames are being offered to c's transport.
func waitQueued(t *testing.T, c *Conn, n int) {
	t.Helper()
	queued := func() int {
		c.r.mu.Lock()
		defer c.r.mu.Unlock()
		return c.waiting
	}
	for deadline := time.Now().Add(10 * time.Second); queued() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d frames queued, want %d", queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func receipt(t *testing.T, ch <-chan delivered) delivered {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery never answered")
	}
	return delivered{}
}

// TestConnectionEndsBeforeTheCommandIsWritten: a connection that ends
// with a command still queued (the transport never took it from Frames)
// did not dispatch it, so the call fails host_not_connected, as a call
// without a connection does, and is not reported as possibly run. A
// command the transport took may have reached the host: its outcome is
// unknown.
func TestConnectionEndsBeforeTheCommandIsWritten(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	written := invoke(r, reg.HostID, 7)
	waitQueued(t, conn, 1)
	(<-conn.Frames()).Wrote(nil) // the transport writes this one
	queued := invoke(r, reg.HostID, 8)
	waitQueued(t, conn, 1)
	conn.Close()

	if d := receipt(t, written); !errors.Is(d.err, ErrHostLost) {
		t.Fatalf("written command: receipt %+v err %v, want ErrHostLost (outcome unknown)", d.rc, d.err)
	}
	d := receipt(t, queued)
	if d.err != nil || d.rc.Type != envapi.ReceiptFailure || d.rc.Code != CodeHostNotConnected {
		t.Fatalf("unwritten command: receipt %+v err %v, want failure %s (not sent)", d.rc, d.err, CodeHostNotConnected)
	}
	// The ended connection's transport finds nothing left to write.
	select {
	case f := <-conn.Frames():
		t.Fatalf("a frame is still queued on the ended connection: %s", f.Data)
	default:
	}
}

// TestDisplacedBeforeTheCommandIsWritten: a newer connection displaces
// the one whose transport had not yet written the command; the call was
// not sent, and the newer connection never receives it.
func TestDisplacedBeforeTheCommandIsWritten(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, _ := r.Register(context.Background())
	first, err := r.Connect(reg.HostID)
	if err != nil {
		t.Fatal(err)
	}
	queued := invoke(r, reg.HostID, 3)
	waitQueued(t, first, 1)
	second, err := r.Connect(reg.HostID)
	if err != nil {
		t.Fatal(err)
	}
	d := receipt(t, queued)
	if d.err != nil || d.rc.Type != envapi.ReceiptFailure || d.rc.Code != CodeHostNotConnected {
		t.Fatalf("displaced before writing: receipt %+v err %v, want failure %s", d.rc, d.err, CodeHostNotConnected)
	}
	select {
	case f := <-second.Frames():
		t.Fatalf("the command was resent on the newer connection: %s", f.Data)
	default:
	}
}
