package hosts

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestSuspendNeverDropsAWrittenCommand: a suspend that answers true
// closed a connection that carried no command, so no call can have been
// written to it; a call delivered at the same moment either keeps the
// connection (the suspend answers false) or is never sent
// (host_not_connected). It never ends unknown on a connection the host
// was told it could close.
func TestSuspendNeverDropsAWrittenCommand(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, err := r.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		conn, err := r.Connect(reg.HostID)
		if err != nil {
			t.Fatal(err)
		}
		// The transport writes whatever is queued at once.
		go func() {
			for {
				select {
				case f := <-conn.Frames():
					f.Wrote(nil)
				case <-conn.Done():
					return
				}
			}
		}()
		call := invoke(r, reg.HostID, uint64(i+1))
		suspended, err := r.Suspend(reg.HostID, conn.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !suspended {
			conn.Close()
			receipt(t, call)
			continue
		}
		d := receipt(t, call)
		if errors.Is(d.err, ErrHostLost) {
			t.Fatalf("round %d: the suspend answered true, yet a command was written to the closed connection (outcome unknown)", i)
		}
		if d.err != nil || d.rc.Type != envapi.ReceiptFailure || d.rc.Code != CodeHostNotConnected {
			t.Fatalf("round %d: receipt %+v err %v after a suspend, want failure %s", i, d.rc, d.err, CodeHostNotConnected)
		}
	}
}

// TestSuspendKeepsAConnectionOwingACancel: a call that returned and was
// then stopped is no longer outstanding, but its cancel_tool is still to
// be written to the connection that carried it, and the host is still
// running the tool. A suspend meanwhile answers false and keeps the
// connection, so the cancel reaches the host (accepted) rather than
// failing host_not_connected on a connection the host was let close.
func TestSuspendKeepsAConnectionOwingACancel(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	b := startBackground(t, r, conn, reg.HostID, 5)
	b.stop()
	if n := held(t, r, reg.HostID); n != 1 {
		t.Fatalf("a stopped call: %d held, want 1 until its cancel operation", n)
	}
	suspended, err := r.Suspend(reg.HostID, conn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if suspended {
		t.Fatal("suspend answered true with the cancel of a running tool still to be written to the connection")
	}
	written := make(chan []byte, 1)
	go func() {
		select {
		case f := <-conn.Frames():
			f.Wrote(nil)
			written <- f.Data
		case <-conn.Done():
			close(written)
		}
	}()
	rc, err := r.Deliver(context.Background(), cancelOp(reg.HostID, 6, 5))
	if err != nil || rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel receipt %+v err %v, want accepted", rc, err)
	}
	if f, ok := <-written; !ok || len(f) == 0 {
		t.Fatal("the cancel_tool command was not written")
	}
	// With the cancel written the connection carries nothing: it may go.
	if suspended, err := r.Suspend(reg.HostID, conn.ID); err != nil || !suspended {
		t.Fatalf("suspend after the cancel was written = %v %v, want true", suspended, err)
	}
}

// TestSuspendKeepsAConnectionWritingACancel: once a cancel operation
// named a stopped call, its cancel_tool is on its way to the connection
// but not yet written. A suspend meanwhile answers false and keeps the
// connection, so the cancel reaches the host (accepted) rather than
// failing host_not_connected on a connection the host was let close.
func TestSuspendKeepsAConnectionWritingACancel(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	stoppedCall(t, r, conn, reg.HostID, 5)
	out := make(chan delivered, 1)
	go func() {
		rc, err := r.Deliver(context.Background(), cancelOp(reg.HostID, 6, 5))
		out <- delivered{rc, err}
	}()
	// The transport has not taken the cancel_tool command yet.
	waitQueued(t, conn, 1)
	suspended, err := r.Suspend(reg.HostID, conn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if suspended {
		t.Fatal("suspend answered true while the cancel of a running tool was being written to the connection")
	}
	f := <-conn.Frames()
	f.Wrote(nil)
	if d := receipt(t, out); d.err != nil || d.rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel receipt %+v err %v, want accepted", d.rc, d.err)
	}
	if suspended, err := r.Suspend(reg.HostID, conn.ID); err != nil || !suspended {
		t.Fatalf("suspend after the cancel was written = %v %v, want true", suspended, err)
	}
}

// TestSuspendAfterACallLetGoWithoutACancel: a call the session let go
// without cancelling it (its lease on the session was lost, or a commit
// failed) is sent no cancel operation. The connection owes the host no
// cancel_tool then, and a suspend closes it, rather than answering false
// for as long as the connection lasts.
func TestSuspendAfterACallLetGoWithoutACancel(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	b := startBackground(t, r, conn, reg.HostID, 5)
	b.drop(errors.New("session: the lease on the session was lost"))
	held(t, r, reg.HostID) // the delivery let the call go
	if suspended, err := r.Suspend(reg.HostID, conn.ID); err != nil || !suspended {
		t.Fatalf("suspend with no command owed to the host = %v %v, want true", suspended, err)
	}
}
