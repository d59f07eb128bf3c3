package main

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

const longCountdown = `{"tool_calls":[{"name":"countdown","input":{"seconds":120}}]}`

// counting starts the host command against the Brain at url with a long
// countdown, and answers the process and the session once the countdown
// runs, seen through a client of the Brain at direct.
func counting(t *testing.T, ctx context.Context, url, direct string, extraEnv ...string) (*clitest.Process, *client.Session) {
	t.Helper()
	p := clitest.Start(t, []string{"--url", url, "--message", longCountdown}, append([]string{"BRAIN_TOKEN=" + brainToken}, extraEnv...)...)
	if !p.WaitOutput(false, "\n> ", 30*time.Second) {
		t.Fatalf("no turn sent:\n%s\n%s", p.Stdout(), p.Stderr())
	}
	_, rest, _ := strings.Cut(p.Stdout(), "session ")
	sid, _, _ := strings.Cut(rest, "\n")
	c, err := client.New(direct, &client.Options{Token: brainToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := c.Sessions.Open(sid)
	for ev, err := range s.Events(ctx, 0, client.Follow()) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType == "countdown" {
			break
		}
	}
	return p, s
}

// turnEnd follows the session until its turn ends and answers how.
func turnEnd(t *testing.T, ctx context.Context, s *client.Session) (api.Event, []api.Event) {
	t.Helper()
	var seen []api.Event
	for ev, err := range s.Events(ctx, 0, client.Follow()) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev)
		if ev.EventType == api.KindTurnEnded || ev.EventType == api.KindTurnFailed {
			return ev, seen
		}
	}
	t.Fatal("the event stream ended before the turn")
	return api.Event{}, nil
}

// TestInterruptStopsTheTurn: SIGINT or SIGTERM while a tool runs
// interrupts the session's turn (the tool's context ends, the call is
// recorded cancelled) and host exits 1 saying so.
func TestInterruptStopsTheTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole Brain over loopback")
	}
	b := braintest.Start(t, braintest.Options{Token: brainToken})
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			p, s := counting(t, ctx, b.URL, b.URL)
			p.Signal(t, sig)
			code, ok := p.Exited(60 * time.Second)
			if !ok || code != 1 || !strings.Contains(p.Stderr(), "host: send: "+sig.String()+" signal received") {
				t.Fatalf("after %v: exited %v with %d, stderr:\n%s", sig, ok, code, p.Stderr())
			}
			end, seen := turnEnd(t, ctx, s)
			if end.EventType != api.KindTurnFailed || !strings.Contains(string(end.Data), `"cancelled"`) {
				t.Fatalf("turn ended %s %s", end.EventType, end.Data)
			}
			for _, ev := range seen {
				if ev.EventType == "tool_call_ended" && !strings.Contains(string(ev.Data), `"status":"cancelled"`) {
					t.Fatalf("tool call ended %s, want cancelled", ev.Data)
				}
			}
		})
	}
}

// TestSecondInterruptQuits: when Brain stops answering, the first SIGINT
// cannot interrupt the turn and host keeps waiting to; a second one
// quits at once, exit 1, saying it did. Brain, answering again, ends the
// turn on its own: the call whose host went away is not left running.
func TestSecondInterruptQuits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole Brain over loopback")
	}
	b := braintest.Start(t, braintest.Options{Token: brainToken})
	target, err := url.Parse(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	// A proxy in front of Brain that, once frozen, holds every new
	// request until released: a Brain that no longer answers.
	var frozen atomic.Bool
	release := make(chan struct{})
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if frozen.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	released := false
	defer func() {
		if !released {
			close(release)
		}
		proxy.CloseClientConnections()
		proxy.Close()
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, s := counting(t, ctx, proxy.URL, b.URL)
	frozen.Store(true)
	p.Signal(t, os.Interrupt)
	p.WaitOutput(true, "stopping", 5*time.Second)
	if _, ok := p.Exited(time.Second); ok {
		t.Fatalf("host exited while Brain did not answer the interrupt:\n%s", p.Stderr())
	}
	p.Signal(t, os.Interrupt)
	code, ok := p.Exited(20 * time.Second)
	if !ok || code != 1 || !strings.Contains(p.Stderr(), "host: interrupt again: quitting") {
		t.Fatalf("after a second interrupt: exited %v with %d, stderr:\n%s", ok, code, p.Stderr())
	}

	close(release)
	released = true
	end, _ := turnEnd(t, ctx, s)
	if end.EventType != api.KindTurnEnded && end.EventType != api.KindTurnFailed {
		t.Fatalf("turn ended %s", end.EventType)
	}
}
