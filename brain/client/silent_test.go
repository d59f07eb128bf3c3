package client_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// freezer relays connections to a server; freeze makes the connections
// relayed so far go silent without closing, as a connection a proxy or a
// NAT dropped on the way does. Later connections are relayed as usual.
type freezer struct {
	URL  string
	mu   sync.Mutex
	open []chan struct{}
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{URL: "http://" + ln.Addr().String()}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", strings.TrimPrefix(target, "http://"))
			if err != nil {
				c.Close()
				continue
			}
			stop := make(chan struct{})
			f.mu.Lock()
			f.open = append(f.open, stop)
			f.mu.Unlock()
			relay := func(dst, src net.Conn) {
				defer dst.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					select {
					case <-stop:
						<-done // silent: read and drop, never close
						return
					default:
					}
					if n > 0 {
						if _, err := dst.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}
			go relay(u, c)
			go relay(c, u)
		}
	}()
	return f
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.open {
		close(c)
	}
	f.open = nil
}

// frozenBrain starts a Brain with a heartbeat of 100 ms, adjusted by edit
// (nil: none), and answers it, a freezer relaying to it and a client of
// the freezer, closed when the test ends.
func frozenBrain(t *testing.T, edit func(*brain.Config)) (*braintest.Brain, *freezer, *client.Client) {
	t.Helper()
	b := braintest.Start(t, braintest.Options{Token: "tok", Edit: func(c *brain.Config) {
		c.Heartbeat = 100 * time.Millisecond
		if edit != nil {
			edit(c)
		}
	}})
	f := newFreezer(t, b.URL)
	c, err := client.New(f.URL, &client.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return b, f, c
}

// followAcrossFreeze follows a new session through a freezer within
// timeout. Once the stream yielded the session's last event, before (nil:
// nothing) runs, every connection relayed so far goes silent and a turn is
// sent directly: the stream must yield its events through to turn_ended,
// in order of sequence, without an error.
func followAcrossFreeze(t *testing.T, timeout time.Duration, before func(context.Context, *client.Session)) {
	t.Helper()
	b, f, c := frozenBrain(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	direct := b.Client(t).Sessions.Open(s.ID)
	var seqs []uint64
	for ev, err := range s.Events(ctx, 0, client.Follow()) {
		if err != nil {
			t.Fatalf("after events %v: %v", seqs, err)
		}
		if len(seqs) > 0 && ev.Sequence <= seqs[len(seqs)-1] {
			t.Fatalf("event %d after %v", ev.Sequence, seqs)
		}
		seqs = append(seqs, ev.Sequence)
		if ev.Sequence == s.Summary.LastSequence {
			if before != nil {
				before(ctx, s)
			}
			f.freeze()
			if _, err := direct.Send(context.Background(), api.UserInput{Message: "hello"}); err != nil {
				t.Fatal(err)
			}
		}
		if ev.EventType == api.KindTurnEnded {
			return
		}
	}
	t.Fatalf("the stream ended after %v", seqs)
}

// frozenHost starts a Brain behind a freezer as frozenBrain does, with a
// tool's time bounded to 1 s, and serves the tool ping with handle on a
// host of the freezer's client. It answers the session of the host, as a
// client of the Brain itself opened it, and the freezer.
func frozenHost(t *testing.T, ctx context.Context, handle func(context.Context, *client.ToolCall) (api.Outcome, error)) (*client.Session, *freezer) {
	t.Helper()
	b, f, c := frozenBrain(t, func(c *brain.Config) { c.Limits.MaxTool = time.Second })
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.Handle("ping", handle)
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	direct := b.Client(t)
	return hostSession(t, direct, h, "ping"), f
}

// pingUntilOK sends turns calling ping to s until a call ends OK (the
// host serves it), and fails the test if none did before ctx ended.
func pingUntilOK(t *testing.T, ctx context.Context, s *client.Session) {
	t.Helper()
	var last api.Outcome
	for attempt := 1; ctx.Err() == nil; attempt++ {
		if _, err := s.Send(ctx, api.UserInput{Message: toolScript("ping")}); err != nil {
			if ctx.Err() != nil {
				break
			}
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		ended := ofKind(events(t, s), api.KindToolCallEnded)
		if last = outcomeOf(t, ended[len(ended)-1]); last.Status == api.OutcomeOK {
			return
		}
	}
	t.Fatalf("the host's calls still end %+v", last)
}

// TestFollowReconnectsSilentStream follows a session over a connection
// that goes silent without closing: the stream's heartbeat comments stop
// arriving, and Follow reconnects from its cursor after a few heartbeat
// intervals instead of waiting forever, so the next turn's events arrive.
func TestFollowReconnectsSilentStream(t *testing.T) {
	followAcrossFreeze(t, 5*time.Second, nil)
}

// TestHostReconnectsSilentConnection serves a host tool over a commands
// connection that goes silent without closing: the host takes it for
// dropped after a few heartbeat intervals and connects again, so that
// later calls reach its handler instead of a connection nobody reads.
func TestHostReconnectsSilentConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	s, f := frozenHost(t, ctx, func(context.Context, *client.ToolCall) (api.Outcome, error) { return client.OK("pong"), nil })
	f.freeze()
	pingUntilOK(t, ctx, s)
}

// TestSlowConsumerKeepsItsStream follows a session with LiveFrames and a
// consumer that is busy for many heartbeat intervals with one event while
// the turn it started streams its model output. The stream did not go
// silent (its frames and heartbeats wait to be read): it is not taken for
// dropped, the one connection carries every frame, and no live delta is
// lost to a reconnection.
func TestSlowConsumerKeepsItsStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct := newCountingTransport()
	c, _ := start(t, brain.Config{Heartbeat: 200 * time.Millisecond}, &http.Client{Transport: ct})
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	const reply = "a busy consumer keeps every delta of its stream"
	var deltas strings.Builder
	for ev, err := range s.Events(ctx, 0, client.Follow(), client.LiveFrames()) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Sequence == s.Summary.LastSequence:
			if _, err := s.Submit(ctx, api.UserInput{Message: `{"stream":true,"delay_ms":50,"reply":"` + reply + `"}`}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // busy for more than seven heartbeat intervals
		case ev.EventType == api.LiveModelOutput:
			var out struct {
				Delta string `json:"delta"`
			}
			if err := json.Unmarshal(ev.Data, &out); err != nil {
				t.Fatal(err)
			}
			deltas.WriteString(out.Delta)
		}
		if ev.EventType == api.KindTurnEnded {
			break
		}
	}
	if deltas.String() != reply {
		t.Errorf("live deltas %q, want %q", deltas.String(), reply)
	}
	if n := ct.streams.Load(); n != 1 {
		t.Errorf("%d stream connections for a stream that never went silent", n)
	}
}

// TestFollowReconnectsPastFrozenIdleConnections follows a session while
// another call of the client left a connection idle in its pool; then
// every connection goes silent, the idle one too, as when a NAT on the
// way forgets them all. The stream is reconnected over a working
// connection rather than sent on the idle one that never answers, so the
// next turn's events arrive.
func TestFollowReconnectsPastFrozenIdleConnections(t *testing.T) {
	followAcrossFreeze(t, 10*time.Second, func(ctx context.Context, s *client.Session) {
		// The stream holds one connection; this read opens another,
		// left idle in the pool.
		if _, err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestHostReconnectsPastFrozenIdleConnections serves a host tool whose
// handler emits an event, which leaves a connection idle in the client's
// pool next to the commands connection; then every connection goes
// silent, the idle one too. The host connects again over a working
// connection, rather than on the idle one that never answers, and later
// calls reach its handler.
func TestHostReconnectsPastFrozenIdleConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, f := frozenHost(t, ctx, func(ctx context.Context, tc *client.ToolCall) (api.Outcome, error) {
		if _, err := tc.Emit(ctx, "pinged", map[string]int{"n": 1}); err != nil {
			return api.Outcome{}, err
		}
		return client.OK("pong"), nil
	})
	if _, err := s.Send(ctx, api.UserInput{Message: toolScript("ping")}); err != nil {
		t.Fatal(err)
	}
	ended := ofKind(events(t, s), api.KindToolCallEnded)
	if o := outcomeOf(t, ended[len(ended)-1]); o.Status != api.OutcomeOK {
		t.Fatalf("first call ended %+v", o)
	}
	f.freeze()
	pingUntilOK(t, ctx, s)
}
