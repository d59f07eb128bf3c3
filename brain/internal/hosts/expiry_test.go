package hosts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestExpiredHostStaysForgottenAfterRestart: a host whose window without
// a connection passed while the server ran is forgotten, and a restart
// does not bring its registration (and token) back.
func TestExpiredHostStaysForgottenAfterRestart(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{now: time.Unix(1000, 0)}
	cfg := Config{Dir: dir, Unconnected: time.Minute, Now: clk.Now}
	r, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg, conn := connected(t, r)
	conn.Close()
	clk.advance(2 * time.Minute)
	r.Close()

	r2 := open(t, cfg)
	if err := r2.Authenticate(reg.HostID, reg.Token); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("the expired host's token after a restart: %v, want ErrUnauthorized", err)
	}
	if _, err := os.Stat(filepath.Join(dir, reg.HostID+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the expired host's registration file: %v, want removed", err)
	}
}

// TestExpiredHostFileRemovedWithoutRequests: a host's registration is
// removed once its window passes, whether or not a request names it, so
// that a server killed later does not find it again.
func TestExpiredHostFileRemovedWithoutRequests(t *testing.T) {
	dir := t.TempDir()
	r := open(t, Config{Dir: dir, Unconnected: 50 * time.Millisecond})
	reg, err := r.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, reg.HostID+".json")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the registration of a host that never connected is still on disk long after its window")
		}
	}
}
