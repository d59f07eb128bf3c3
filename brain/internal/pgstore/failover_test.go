package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/jackc/pgx/v5"
)

const providerCredential = "pgstore-provider-credential"

// hangProvider is an environment whose executes wait until Brain cancels
// them (or the test ends); envtest.Provider records every execute it got.
type hangProvider struct {
	envsdk.Base
	*envtest.Provider
	stopped atomic.Int32 // executes whose context Brain ended
}

func newHangProvider(t *testing.T) *hangProvider {
	p := &hangProvider{}
	p.Provider = envtest.NewProvider(t, envsdk.NewHandler(p, &envsdk.Options{Token: providerCredential}))
	return p
}

func (p *hangProvider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	select {
	case <-c.Context().Done():
		p.stopped.Add(1)
		return envapi.Receipt{}, context.Cause(c.Context())
	case <-p.Done():
		return envsdk.Output("released")
	}
}

// freePort answers a loopback address nothing listens on now.
func freePort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// clusterNode runs brain serve on the database with a public URL (so that
// other nodes can forward to it) and a lease of leaseSecs.
func clusterNode(t testing.TB, dbURL, keyFile string, leaseSecs int) *node {
	addr := freePort(t)
	return serveNodeEnv(t, dbURL, keyFile, "BRAIN_LISTEN="+addr, "BRAIN_PUBLIC_URL=http://"+addr,
		fmt.Sprintf("BRAIN_LEASE_SECS=%d", leaseSecs))
}

func sealingKey(t testing.TB) string {
	keyFile := filepath.Join(t.TempDir(), "sealing.key")
	os.WriteFile(keyFile, []byte(strings.Repeat("5a", 32)), 0o600)
	return keyFile
}

// toolSession creates, on n, a session whose scripted model calls the
// provider's hanging tool "wait" when told, kept in memory between turns.
func toolSession(t *testing.T, ctx context.Context, n *node, p *hangProvider) *client.Session {
	ttl := int64(0)
	s, err := n.client(t).Sessions.Create(ctx, api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		IdleTTLMs:    &ttl,
		Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: p.URL, Credential: providerCredential}},
		Tools: []api.Tool{{Name: "wait", Description: "wait", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{}`)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func waitTurn() string {
	b, _ := json.Marshal(map[string]any{"tool_calls": []map[string]any{{"name": "wait", "input": map[string]any{}}}})
	return string(b)
}

// TestFailoverDuringToolCall kills the node running a session's turn with
// SIGKILL while its tool call is in flight: a message sent to another node
// succeeds within the lease time + 2 s; the interrupted turn is failed,
// the tool call is ambiguous, and the provider got its execute only once.
func TestFailoverDuringToolCall(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const lease = 2
	a, b := clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease)
	p := newHangProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := toolSession(t, ctx, a, p)
	if _, err := s.Submit(ctx, api.UserInput{Message: waitTurn()}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(p.Received(envapi.RequestExecute, "box")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the tool's execute never reached the provider")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A write to B while A lives is forwarded to A, the owner: its turn is
	// running, so the message is refused as busy there.
	if _, err := b.client(t).Sessions.Open(s.ID).Send(ctx, api.UserInput{Message: "while busy"}); !isBusy(err) {
		t.Fatalf("message to B while A runs the turn = %v, want A's busy refusal", err)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	killed := time.Now()
	var err error
	for {
		_, err = b.client(t).Sessions.Open(s.ID).Send(ctx, api.UserInput{Message: "after"})
		if err == nil || time.Since(killed) > (lease+2)*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("message to B %v after A died = %v", time.Since(killed), err)
	}
	t.Logf("failover: first message on B succeeded %v after SIGKILL (lease %d s)", time.Since(killed), lease)
	evs := allEvents(t, ctx, b, s.ID)
	var turnFailed, toolAmbiguous, turnsEnded bool
	for _, ev := range evs {
		switch ev.EventType {
		case api.KindTurnFailed:
			turnFailed = strings.Contains(string(ev.Data), api.FailureInterrupted)
		case api.KindToolCallFailed, api.KindToolCallEnded:
			toolAmbiguous = toolAmbiguous || strings.Contains(string(ev.Data), "ambiguous") || strings.Contains(string(ev.Data), "unknown")
		case api.KindTurnEnded:
			turnsEnded = true
		}
	}
	if !turnFailed || !toolAmbiguous || !turnsEnded {
		t.Errorf("events after failover: turn failed %v, tool ambiguous %v, next turn ended %v:\n%s", turnFailed, toolAmbiguous, turnsEnded, kindsOf(evs))
	}
	if n := len(p.Received(envapi.RequestExecute, "box")); n != 1 {
		t.Errorf("the provider got %d executes, want 1 (never resent)", n)
	}
}

func isBusy(err error) bool {
	var ae *api.ApiError
	return errors.As(err, &ae) && ae.Code == api.CodeConflict
}

func allEvents(t *testing.T, ctx context.Context, n *node, id string) []api.Event {
	var evs []api.Event
	for ev, err := range n.client(t).Sessions.Open(id).Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func sqlScan(t *testing.T, url, sql string, dst any, args ...any) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.QueryRow(ctx, sql, args...).Scan(dst); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func kindsOf(evs []api.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%d %s %s\n", e.Sequence, e.EventType, e.Data)
	}
	return b.String()
}

// TestRacingNodesTakeExpiredLease lets the owner of a session die, then
// sends a message to two other nodes at once: both succeed, one by taking
// the lease and the other by forwarding to it (a single node ran both
// turns: no turn failed as busy elsewhere, none ran twice).
func TestRacingNodesTakeExpiredLease(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const lease = 2
	a, b, c := clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ttl := int64(0)
	s, err := a.client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	time.Sleep((lease + 1) * time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, n := range []*node{b, c} {
		wg.Go(func() {
			// Sequential turns of one session: the second waits for the
			// first (busy answers are retried), wherever it runs.
			for {
				_, errs[i] = n.client(t).Sessions.Open(s.ID).Send(ctx, api.UserInput{Message: fmt.Sprintf("from %d", i)})
				if !isBusy(errs[i]) {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("message %d = %v", i, err)
		}
	}
	evs := allEvents(t, ctx, c, s.ID)
	ended := 0
	for _, ev := range evs {
		if ev.EventType == api.KindTurnEnded {
			ended++
		}
	}
	if ended != 3 {
		t.Errorf("%d turns ended, want 3:\n%s", ended, kindsOf(evs))
	}
	var owners int
	sqlScan(t, dbURL, `SELECT count(*) FROM brain_leases WHERE session_id = $1 AND expires_at > now()`, &owners, []byte(s.ID))
	if owners != 1 {
		t.Errorf("%d live leases on the session, want 1", owners)
	}
}

// TestDrainHandsOver stops the owner with SIGTERM: its lease is released,
// so another node serves the session's next message at once, without
// waiting for the lease to expire.
func TestDrainHandsOver(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const lease = 30
	a, b := clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ttl := int64(0)
	s, err := a.client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	a.cmd.Process.Signal(syscall.SIGTERM)
	<-a.done
	stopped := time.Now()
	if _, err := b.client(t).Sessions.Open(s.ID).Send(ctx, api.UserInput{Message: "two"}); err != nil {
		t.Fatalf("message to B after A drained = %v", err)
	}
	if d := time.Since(stopped); d > lease*time.Second/2 {
		t.Errorf("B served the session %v after A drained; the lease (%d s) was not released", d, lease)
	}
}

// BenchmarkFailover measures the time from SIGKILL of the node holding a
// session's lease (1 s) to the first message another node serves for it,
// reported as failover-ms next to lease-ms (the target is at most lease
// + 1 s).
func BenchmarkFailover(b *testing.B) {
	dbURL, keyFile := pgtest.Database(b), sealingKey(b)
	const lease = 1
	other := clusterNode(b, dbURL, keyFile, lease)
	ctx := context.Background()
	ttl := int64(0)
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		owner := clusterNode(b, dbURL, keyFile, lease)
		s, err := owner.client(b).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Send(ctx, api.UserInput{Message: "one"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		owner.cmd.Process.Signal(syscall.SIGKILL)
		killed := time.Now()
		<-owner.done
		for {
			if _, err = other.client(b).Sessions.Open(s.ID).Send(ctx, api.UserInput{Message: "two"}); err == nil {
				break
			}
			if time.Since(killed) > 30*time.Second {
				b.Fatalf("no failover in 30 s: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		total += time.Since(killed)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "failover-ms")
	b.ReportMetric(lease*1000, "lease-ms")
}

// TestLostLeaseStopsActivation takes the lease of a session away from the
// node running its turn (another node's epoch, written in the database):
// at its next renewal the node stops the turn at once (the tool's execute
// is cancelled), and commits nothing more for the session.
func TestLostLeaseStopsActivation(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const lease = 3
	a := clusterNode(t, dbURL, keyFile, lease)
	p := newHangProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := toolSession(t, ctx, a, p)
	if _, err := s.Submit(ctx, api.UserInput{Message: waitTurn()}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(p.Received(envapi.RequestExecute, "box")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the tool's execute never reached the provider")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	var before int64
	sqlScan(t, dbURL, `SELECT next_seq FROM brain_sessions WHERE session_id = $1`, &before, []byte(s.ID))
	sqlExec(t, dbURL, `WITH l AS (UPDATE brain_leases SET node_id = 'elsewhere', epoch = epoch + 1, expires_at = now() + interval '1 hour'
		WHERE session_id = $1 RETURNING epoch) UPDATE brain_sessions SET epoch = (SELECT epoch FROM l) WHERE session_id = $1`, []byte(s.ID))
	stolen := time.Now()
	for p.stopped.Load() == 0 {
		if time.Since(stolen) > lease*time.Second {
			t.Fatalf("the turn's tool was not stopped %v after the lease was lost", time.Since(stolen))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("tool stopped %v after the lease was taken away (lease %d s)", time.Since(stolen), lease)
	time.Sleep(time.Second)
	var after int64
	sqlScan(t, dbURL, `SELECT next_seq FROM brain_sessions WHERE session_id = $1`, &after, []byte(s.ID))
	if after != before {
		t.Errorf("the node committed %d records after losing the lease", after-before)
	}
}
