package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

// TestSignalStopsServing: SIGTERM or SIGINT with no activation running
// stops the server: it exits 0 saying it stops.
func TestSignalStopsServing(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		p := clitest.Start(t, []string{"--listen", "127.0.0.1:0"}, "LOOPS_TOKEN=loops-signal-token")
		if !p.WaitOutput(false, "agentloops serving on http://127.0.0.1:", 30*time.Second) {
			t.Fatalf("not serving:\n%s\n%s", p.Stdout(), p.Stderr())
		}
		p.Signal(t, sig)
		code, ok := p.Exited(30 * time.Second)
		if !ok || code != 0 || !strings.Contains(p.Stderr(), "remote-agentloop: "+sig.String()+": stopping") {
			t.Fatalf("after %v: exited %v with %d, stderr:\n%s", sig, ok, code, p.Stderr())
		}
	}
}
