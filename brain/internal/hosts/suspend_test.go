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
				case <-conn.Frames():
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
