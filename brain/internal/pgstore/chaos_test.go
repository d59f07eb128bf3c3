package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// countingProvider answers every execute at once and counts the executes
// it got by the "key" of their input.
type countingProvider struct {
	envsdk.Base
	*envtest.Provider
	mu    sync.Mutex
	byKey map[string]int
}

func newCountingProvider(t *testing.T) *countingProvider {
	p := &countingProvider{byKey: map[string]int{}}
	p.Provider = envtest.NewProvider(t, envsdk.NewHandler(p, &envsdk.Options{Token: providerCredential}))
	return p
}

func (p *countingProvider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var in struct {
		Key string `json:"key"`
	}
	json.Unmarshal(x.Input, &in)
	p.mu.Lock()
	p.byKey[in.Key]++
	p.mu.Unlock()
	return envsdk.Output("counted " + in.Key)
}

func (p *countingProvider) executes(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byKey[key]
}

// cluster is a set of brain serve processes on one database, any of which
// may be down (killed, being restarted) at any moment.
type cluster struct {
	t              *testing.T
	dbURL, keyFile string
	lease          int
	mu             sync.Mutex
	slots          []*node // nil while down
	restarts       sync.WaitGroup
}

func newCluster(t *testing.T, dbURL, keyFile string, nodes, lease int) *cluster {
	c := &cluster{t: t, dbURL: dbURL, keyFile: keyFile, lease: lease}
	for range nodes {
		c.slots = append(c.slots, clusterNode(t, dbURL, keyFile, lease))
	}
	return c
}

// pick answers a random node that is up, nil when none is.
func (c *cluster) pick() *node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var up []*node
	for _, n := range c.slots {
		if n != nil {
			up = append(up, n)
		}
	}
	if len(up) == 0 {
		return nil
	}
	return up[rand.IntN(len(up))]
}

// kill SIGKILLs a random node that is up, leaving at least one other node
// up (waiting for restarts when needed), and starts a new process in its
// slot in the background. It answers false when no node could be killed.
func (c *cluster) kill() bool {
	deadline := time.Now().Add(60 * time.Second)
	for {
		c.mu.Lock()
		var up []int
		for i, n := range c.slots {
			if n != nil {
				up = append(up, i)
			}
		}
		if len(up) >= 2 {
			i := up[rand.IntN(len(up))]
			n := c.slots[i]
			c.slots[i] = nil
			c.mu.Unlock()
			n.cmd.Process.Signal(syscall.SIGKILL)
			<-n.done
			c.restart(i)
			return true
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *cluster) restart(slot int) {
	c.restarts.Go(func() {
		addr := freePort(c.t)
		n, err := launchNode(c.t, c.dbURL, c.keyFile, "BRAIN_LISTEN="+addr, "BRAIN_PUBLIC_URL=http://"+addr,
			fmt.Sprintf("BRAIN_LEASE_SECS=%d", c.lease))
		if err != nil {
			c.t.Errorf("restarting node %d: %v", slot, err)
			return
		}
		c.mu.Lock()
		c.slots[slot] = n
		c.mu.Unlock()
	})
}

// postMessage sends one message synchronously with an idempotency key and
// answers the status and the error code of a non-2xx answer (err: no
// answer at all).
func postMessage(ctx context.Context, hc *http.Client, base, id, key, msg string) (int, string, error) {
	body, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: msg}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/sessions/"+id+"/messages", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, "", nil
	}
	var e api.ApiError
	if json.Unmarshal(b, &e) != nil {
		return resp.StatusCode, "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return resp.StatusCode, e.Code, nil
}

// countTurn is the scripted message of turn key: one call of the counting
// tool, then the reply "done <key>".
func countTurn(key string) string {
	b, _ := json.Marshal(map[string]any{
		"tool_calls": []map[string]any{{"name": "count", "input": map[string]any{"key": key}}},
		"reply":      "done " + key,
	})
	return string(b)
}

// TestRandomNodeKillsUnderLoad SIGKILLs 50 random brain serve processes
// (of three, each restarted at once; a kill every 200-400 ms; 1 s leases)
// while 16 clients run turns on 16 sessions, each turn under its own
// idempotency key, sent to a random node and retried there on any
// retryable failure with the same key. Afterwards no acknowledged turn is
// lost (its message and its reply are in the transcript), and no turn ran
// twice: every key's message is in the transcript and its tool call in
// the journal at most once (exactly once when acknowledged), and the
// tool's provider got at most one execute per key (exactly one when
// acknowledged).
func TestRandomNodeKillsUnderLoad(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const (
		nodes    = 3
		lease    = 1
		sessions = 16
		kills    = 50
	)
	c := newCluster(t, dbURL, keyFile, nodes, lease)
	p := newCountingProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ttl := int64(0)
	ids := make([]string, sessions)
	for i := range ids {
		s, err := c.slots[i%nodes].client(t).Sessions.Create(ctx, api.CreateSessionRequest{
			Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
			IdleTTLMs:    &ttl,
			Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: p.URL, Credential: providerCredential}},
			Tools: []api.Tool{{Name: "count", Description: "count", InputSchema: json.RawMessage(`{"type":"object"}`),
				Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{}`)}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.ID
	}

	type outcome struct {
		key   string
		acked bool
	}
	results := make([][]outcome, sessions)
	var stop atomic.Bool
	var acked, retries atomic.Int64
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 30 * time.Second}
	for w := range sessions {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("k%02d-%04d", w, i)
				o := outcome{key: key}
				for giveUp := time.Now().Add(90 * time.Second); time.Now().Before(giveUp); {
					n := c.pick()
					if n == nil {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					status, code, err := postMessage(ctx, hc, n.url, ids[w], key, countTurn(key))
					if status == http.StatusOK {
						o.acked = true
						acked.Add(1)
						break
					}
					if err != nil || code == api.CodeOverloaded || code == api.CodeConflict {
						// No answer (the node died), the owner's node is
						// unreachable or busy: retry with the same key.
						retries.Add(1)
						time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
						continue
					}
					if code == api.CodeAmbiguous || code == api.CodeInterrupted {
						break // settled, not acknowledged
					}
					t.Errorf("%s: message answered %d %s", key, status, code)
					break
				}
				results[w] = append(results[w], o)
			}
		})
	}
	start := time.Now()
	for k := range kills {
		time.Sleep(time.Duration(200+rand.IntN(200)) * time.Millisecond)
		if !c.kill() {
			t.Fatalf("kill %d: no two nodes were up for a minute", k)
		}
	}
	t.Logf("%d kills in %v", kills, time.Since(start))
	c.restarts.Wait()
	// Let the clients run a little on the whole cluster, then stop them.
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	n := c.pick()
	total := 0
	for w, id := range ids {
		tr, err := n.client(t).Sessions.Open(id).Transcript(ctx)
		if err != nil {
			t.Fatal(err)
		}
		users, replies := map[string]int{}, map[string]int{}
		for _, m := range tr.Messages {
			for _, b := range m.Content {
				switch {
				case m.Role == "user" && strings.Contains(b.Text, `"key":"k`):
					var s struct {
						ToolCalls []struct {
							Input struct {
								Key string `json:"key"`
							} `json:"input"`
						} `json:"tool_calls"`
					}
					if json.Unmarshal([]byte(b.Text), &s) == nil && len(s.ToolCalls) == 1 {
						users[s.ToolCalls[0].Input.Key]++
					}
				case m.Role == "assistant":
					if k, ok := strings.CutPrefix(b.Text, "done "); ok {
						replies[k]++
					}
				}
			}
		}
		// The journal itself: each key's tool call was started at most once.
		started := map[string]int{}
		for _, ev := range allEvents(t, ctx, n, id) {
			if ev.EventType != api.KindToolCallStarted {
				continue
			}
			var d struct {
				Input struct {
					Key string `json:"key"`
				} `json:"input"`
			}
			if json.Unmarshal(ev.Data, &d) == nil {
				started[d.Input.Key]++
			}
		}
		for _, o := range results[w] {
			total++
			ex, st := p.executes(o.key), started[o.key]
			switch {
			case users[o.key] > 1 || replies[o.key] > 1 || ex > 1 || st > 1:
				t.Errorf("%s ran twice: %d messages, %d replies, %d tool calls started, %d executes", o.key, users[o.key], replies[o.key], st, ex)
			case o.acked && (users[o.key] != 1 || replies[o.key] != 1 || ex != 1 || st != 1):
				t.Errorf("acknowledged %s lost: %d messages, %d replies, %d tool calls started, %d executes", o.key, users[o.key], replies[o.key], st, ex)
			}
		}
	}
	t.Logf("%d turns, %d acknowledged, %d retried sends", total, acked.Load(), retries.Load())
	if acked.Load() < sessions*2 {
		t.Errorf("only %d turns were acknowledged; the load did not run through the kills", acked.Load())
	}
}

func readyOf(hc *http.Client, n *node) int {
	resp, err := hc.Get(n.url + "/health/ready")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDatabaseCrashUnderClusterLoad stops PostgreSQL with pg_ctl stop -m
// immediate while 8 clients run turns through random nodes of three
// (idempotency keys, retried with the same key), then starts it again on
// the same data directory and port. While it is down, requests answer
// 503 overloaded (retryable) and /health/ready answers 503 on every node;
// once it is back, /health/ready answers 204 again and turns succeed;
// every acknowledged turn is in the transcript, and none is there twice.
func TestDatabaseCrashUnderClusterLoad(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	srv := pgtest.Control(t)
	const (
		nodes    = 3
		lease    = 2
		sessions = 8
	)
	c := newCluster(t, dbURL, keyFile, nodes, lease)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ttl := int64(0)
	ids := make([]string, sessions)
	for i := range ids {
		s, err := c.slots[i%nodes].client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.ID
	}
	type outcome struct {
		key   string
		acked bool
	}
	results := make([][]outcome, sessions)
	var down, stop atomic.Bool
	var overloadedWhileDown, ackedAfter, other atomic.Int64
	var back atomic.Bool
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 30 * time.Second}
	for w := range sessions {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("d%02d-%04d", w, i)
				o := outcome{key: key}
				for giveUp := time.Now().Add(90 * time.Second); time.Now().Before(giveUp); {
					status, code, err := postMessage(ctx, hc, c.pick().url, ids[w], key, key)
					if status == http.StatusOK {
						o.acked = true
						if back.Load() {
							ackedAfter.Add(1)
						}
						break
					}
					if code == api.CodeOverloaded && status == http.StatusServiceUnavailable {
						if down.Load() {
							overloadedWhileDown.Add(1)
						}
					} else if err != nil || code != api.CodeConflict {
						if code == api.CodeAmbiguous {
							break // settled, not acknowledged
						}
						other.Add(1)
						t.Logf("%s: answered %d %q %v", key, status, code, err)
					}
					time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
				}
				results[w] = append(results[w], o)
			}
		})
	}
	time.Sleep(time.Second)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	for i := range nodes {
		n := c.slots[i]
		for deadline := time.Now().Add(10 * time.Second); readyOf(hc, n) != http.StatusServiceUnavailable; {
			if time.Now().After(deadline) {
				t.Fatalf("node %d: /health/ready does not answer 503 with the database down", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(time.Duration(lease) * time.Second) // past the leases
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	down.Store(false)
	back.Store(true)
	for i := range nodes {
		n := c.slots[i]
		for deadline := time.Now().Add(30 * time.Second); readyOf(hc, n) != http.StatusNoContent; {
			if time.Now().After(deadline) {
				t.Fatalf("node %d: /health/ready does not answer 204 after the database came back", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ackedAfter.Load() < 3*sessions && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if overloadedWhileDown.Load() == 0 {
		t.Error("no request answered 503 overloaded while the database was down")
	}
	if ackedAfter.Load() < 3*sessions {
		t.Errorf("only %d turns succeeded after the database came back", ackedAfter.Load())
	}
	if other.Load() > 0 {
		t.Errorf("%d answers were neither 200, 503 overloaded, busy nor ambiguous", other.Load())
	}
	total, acked := 0, 0
	for w, id := range ids {
		tr, err := c.pick().client(t).Sessions.Open(id).Transcript(ctx)
		if err != nil {
			t.Fatal(err)
		}
		users, replies := map[string]int{}, map[string]int{}
		for _, m := range tr.Messages {
			for _, b := range m.Content {
				if m.Role == "user" {
					users[b.Text]++
				} else if k, ok := strings.CutPrefix(b.Text, "echo: "); ok {
					replies[k]++
				}
			}
		}
		for _, o := range results[w] {
			total++
			switch {
			case users[o.key] > 1 || replies[o.key] > 1:
				t.Errorf("%s ran twice: %d messages, %d replies", o.key, users[o.key], replies[o.key])
			case o.acked && (users[o.key] != 1 || replies[o.key] != 1):
				t.Errorf("acknowledged %s lost: %d messages, %d replies", o.key, users[o.key], replies[o.key])
			}
			if o.acked {
				acked++
			}
		}
	}
	t.Logf("%d turns, %d acknowledged (%d after the restart), %d 503s while down", total, acked, ackedAfter.Load(), overloadedWhileDown.Load())
}
