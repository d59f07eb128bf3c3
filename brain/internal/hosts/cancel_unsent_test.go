package hosts

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// cancelOp is the cancel operation (at sequence seq) of tool call target
// on host id.
func cancelOp(id string, seq, target uint64) session.Operation {
	return session.Operation{
		Operation: envapi.Operation{
			SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Environment: "h", Sequence: seq, Request: envapi.Cancel(target),
		},
		Declaration: api.Environment{Name: "h", Driver: api.DriverHost, HostID: id},
	}
}

// connected registers a host on r and connects it.
func connected(t *testing.T, r *Registry) (api.HostRegistration, *Conn) {
	t.Helper()
	reg, err := r.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := r.Connect(reg.HostID)
	if err != nil {
		t.Fatal(err)
	}
	return reg, conn
}

// stoppedCall starts background call seq on conn and stops it: the call
// is held until its cancel operation.
func stoppedCall(t *testing.T, r *Registry, conn *Conn, id string, seq uint64) {
	t.Helper()
	startBackground(t, r, conn, id, seq).stop()
	if n := held(t, r, id); n != 1 {
		t.Fatalf("a stopped call: %d held, want 1 until its cancel operation", n)
	}
}

// TestCancelNeverWrittenIsNotAccepted: a cancel_tool command whose
// connection ends before the transport wrote it never reached the host.
// Its cancel operation is answered failure host_not_connected (the
// cancel was not sent), never accepted, and the command is not written
// anywhere later.
func TestCancelNeverWrittenIsNotAccepted(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	stoppedCall(t, r, conn, reg.HostID, 100)
	out := make(chan delivered, 1)
	go func() {
		rc, err := r.Deliver(context.Background(), cancelOp(reg.HostID, 101, 100))
		out <- delivered{rc, err}
	}()
	// The transport is stuck and never takes the cancel_tool command;
	// then the connection ends.
	waitQueued(t, conn, 1)
	conn.Close()
	d := receipt(t, out)
	if d.err != nil || d.rc.Type != envapi.ReceiptFailure || d.rc.Code != CodeHostNotConnected {
		t.Fatalf("cancel never written: receipt %+v err %v, want failure %s", d.rc, d.err, CodeHostNotConnected)
	}
	select {
	case f := <-conn.Frames():
		t.Fatalf("a frame is still to be written on the ended connection: %s", f.Data)
	default:
	}
	second, err := r.Connect(reg.HostID)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-second.Frames():
		t.Fatalf("the newer connection was sent %s", f.Data)
	default:
	}
}

// TestCancelNotTakenBeforeItsDeliveryEnds: a cancel_tool command that the
// transport does not take before the cancel operation's delivery ends
// (the engine bounds it) was not sent: the operation is answered failure
// host_not_connected, and the command is not written afterwards.
func TestCancelNotTakenBeforeItsDeliveryEnds(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	stoppedCall(t, r, conn, reg.HostID, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	rc, err := r.Deliver(ctx, cancelOp(reg.HostID, 101, 100))
	if err != nil || rc.Type != envapi.ReceiptFailure || rc.Code != CodeHostNotConnected {
		t.Fatalf("cancel not taken in time: receipt %+v err %v, want failure %s", rc, err, CodeHostNotConnected)
	}
	select {
	case f := <-conn.Frames():
		t.Fatalf("the cancel was written after its operation was answered: %s", f.Data)
	default:
	}
}
