package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// gauges scrapes a node's /metrics and answers its samples by their line
// name (name{labels}).
func gauges(t *testing.T, b *braintest.Brain) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", b.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually scrapes b until want holds of its samples (a count of the
// database is kept up to pgstore.PassivatedEvery).
func eventually(t *testing.T, b *braintest.Brain, what string, want func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(3*pgstore.PassivatedEvery + 5*time.Second)
	for {
		g := gauges(t, b)
		if want(g) {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: active %v, passivated %v", what, g["brain_sessions_active"], g["brain_sessions_passivated"])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func keyFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "sealing.key")
	if err := os.WriteFile(f, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func startKeepingNode(t *testing.T, url, keyFile string) *braintest.Brain {
	return braintest.Start(t, braintest.Options{Token: "tok", Edit: func(c *brain.Config) {
		c.Storage = brain.Storage{DatabaseURL: url, SealingKeyFile: keyFile}
		c.IdleTTL = -1 // keep sessions in memory
	}})
}

// TestSessionGaugesAcrossNodes runs a session on node A of two: A reports
// it active, neither node reports it passivated, and both report the
// sessions no node holds (stored rows without a live lease) alike, so that
// the sum of brain_sessions_active over nodes plus brain_sessions_passivated
// is the sessions of the database. The turn A ran is counted by A only.
func TestSessionGaugesAcrossNodes(t *testing.T) {
	url := pgtest.Database(t)
	key := keyFile(t)
	a, b := startKeepingNode(t, url, key), startKeepingNode(t, url, key)
	ctx := context.Background()
	s, err := a.Client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	ga := gauges(t, a)
	if ga["brain_sessions_active"] != 1 || ga["brain_sessions_passivated"] != 0 {
		t.Errorf("node A: active %v, passivated %v, want 1 and 0", ga["brain_sessions_active"], ga["brain_sessions_passivated"])
	}
	gb := gauges(t, b)
	if gb["brain_sessions_active"] != 0 || gb["brain_sessions_passivated"] != 0 {
		t.Errorf("node B: active %v, passivated %v, want 0 and 0 (the session runs on A)", gb["brain_sessions_active"], gb["brain_sessions_passivated"])
	}
	// The turn's records were committed by A: A counts them, B does not.
	if got := ga[`brain_turns_total{outcome="ok"}`]; got != 1 {
		t.Errorf(`node A brain_turns_total{outcome="ok"} = %v, want 1`, got)
	}
	if ga["brain_journal_group_commit_records_count"] == 0 || ga["brain_journal_fsync_seconds_count"] == 0 {
		t.Errorf("node A journal commit histograms did not move: %v, %v",
			ga["brain_journal_group_commit_records_count"], ga["brain_journal_fsync_seconds_count"])
	}
	if got := gb[`brain_turns_total{outcome="ok"}`]; got != 0 {
		t.Errorf(`node B brain_turns_total{outcome="ok"} = %v, want 0`, got)
	}

	// Three sessions no node holds: one never leased, one whose lease was
	// released, one whose lease expired.
	sqlExec(t, url, `INSERT INTO brain_sessions (session_id, next_seq, last_ms, epoch)
		SELECT convert_to('ses_' || lpad(i::text, 20, '0'), 'UTF8'), 2, 0, 0 FROM generate_series(1, 3) i`)
	sqlExec(t, url, `INSERT INTO brain_leases (session_id, node_id, epoch, expires_at) VALUES
		(convert_to('ses_' || lpad('2', 20, '0'), 'UTF8'), 'gone', 1, '-infinity'),
		(convert_to('ses_' || lpad('3', 20, '0'), 'UTF8'), 'gone', 1, now() - interval '1 second')`)
	for name, n := range map[string]*braintest.Brain{"A": a, "B": b} {
		g := eventually(t, n, "node "+name, func(g map[string]float64) bool { return g["brain_sessions_passivated"] == 3 })
		t.Logf("node %s: active %v, passivated %v", name, g["brain_sessions_active"], g["brain_sessions_passivated"])
	}
}

// TestScrapeCostDoesNotGrowWithSessions scrapes a node of a database
// holding 100,000 sessions: what the node allocates per scrape stays far
// below what reading their ids would take.
func TestScrapeCostDoesNotGrowWithSessions(t *testing.T) {
	url := pgtest.Database(t)
	n := startKeepingNode(t, url, keyFile(t))
	const sessions = 100_000
	sqlExec(t, url, `INSERT INTO brain_sessions (session_id, next_seq, last_ms, epoch)
		SELECT convert_to('ses_' || lpad(i::text, 20, '0'), 'UTF8'), 2, 0, 0 FROM generate_series(1, $1::int) i`, sessions)
	gauges(t, n) // the first scrape registers what scrapes reuse
	const bound = 2 << 20
	var most uint64
	eventually(t, n, "100,000 sessions", func(map[string]float64) bool {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g := gauges(t, n)
		runtime.ReadMemStats(&after)
		most = max(most, after.TotalAlloc-before.TotalAlloc)
		return g["brain_sessions_passivated"] == sessions
	})
	t.Logf("most allocated by a scrape: %d bytes", most)
	if most > bound {
		t.Errorf("a scrape allocated %d bytes with %d sessions in the database, want at most %d", most, sessions, bound)
	}
}

// TestPassivatedCount counts the sessions no node holds a live lease on,
// the same from every node, and asks the database at most once per
// pgstore.PassivatedEvery.
func TestPassivatedCount(t *testing.T) {
	url := pgtest.Database(t)
	a, b := openDB(t, url, nil), openDB(t, url, nil)
	ctx := context.Background()
	for _, id := range []string{"ses_held0000000000000000", "ses_released000000000000", "ses_never000000000000000"} {
		if err := a.Journal().Append(ctx, id, 1, []journal.Record{rec("x", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.AcquireLease(ctx, "ses_held0000000000000000"); err != nil {
		t.Fatal(err)
	}
	l, err := a.AcquireLease(ctx, "ses_released000000000000")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	// A lease on a session with no records is no stored session.
	if _, err := b.AcquireLease(ctx, "ses_unstored000000000000"); err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]*pgstore.DB{"a": a, "b": b} {
		if n, err := db.Passivated(ctx); err != nil || n != 2 {
			t.Errorf("node %s: Passivated = %d, %v, want 2", name, n, err)
		}
	}
	if err := a.Journal().Append(ctx, "ses_later000000000000000", 1, []journal.Record{rec("x", 1)}); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Passivated(ctx); err != nil || n != 2 {
		t.Errorf("Passivated right after a count = %d, %v, want the count kept (2)", n, err)
	}
}

// TestCommitHooks reports the appends this node commits, and not one that
// lost its compare-and-set.
func TestCommitHooks(t *testing.T) {
	url := pgtest.Database(t)
	var mu sync.Mutex
	var committed, durable int
	db := openDB(t, url, func(o *pgstore.Options) {
		o.OnCommit = func(records int, d time.Duration) {
			mu.Lock()
			committed += records
			mu.Unlock()
		}
		o.OnDurable = func(session string, recs []journal.Record) {
			mu.Lock()
			durable += len(recs)
			mu.Unlock()
			for i, r := range recs {
				if r.Sequence != uint64(i)+recs[0].Sequence || r.Sequence == 0 || r.RecordedAtMs == 0 {
					t.Errorf("durable record %+v of %s without its sequence or time", r, session)
				}
			}
		}
	})
	ctx := context.Background()
	const id = "ses_hooks000000000000000"
	if err := db.Journal().Append(ctx, id, 1, []journal.Record{rec("a", 1), rec("b", 2)}); err != nil {
		t.Fatal(err)
	}
	if err := db.Journal().Append(ctx, id, 3, []journal.Record{rec("c", 3)}); err != nil {
		t.Fatal(err)
	}
	if err := db.Journal().Append(ctx, id, 3, []journal.Record{rec("d", 4)}); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("stale append = %v, want ErrConflict", err)
	}
	// Appends of many sessions at once, committed in groups.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			id := fmt.Sprintf("ses_hooks%015d", i+1)
			for k := range 4 {
				if err := db.Journal().Append(ctx, id, uint64(k+1), []journal.Record{rec("x", k)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if committed != 3+64 || durable != 3+64 {
		t.Errorf("OnCommit reported %d records, OnDurable %d, want %d", committed, durable, 3+64)
	}
}

// TestForwardedWriteCountedOnceAcrossNodes: a message sent to node B for a
// session A holds is forwarded to A and counted once in
// brain_http_requests_total over the nodes, by B, which the client sent
// it to; A counts it in brain_http_forwarded_requests_total.
func TestForwardedWriteCountedOnceAcrossNodes(t *testing.T) {
	url := pgtest.Database(t)
	key := keyFile(t)
	a, b := startKeepingNode(t, url, key), startKeepingNode(t, url, key)
	ctx := context.Background()
	s, err := a.Client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	const route = `{code="200",route="POST /v1/sessions/{id}/messages"}`
	before := gauges(t, a)["brain_http_requests_total"+route] + gauges(t, b)["brain_http_requests_total"+route]
	if _, err := b.Client(t).Sessions.Open(s.ID).Send(ctx, api.UserInput{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	// The owner counts a request once its handler returned, which may be
	// after the relayed answer reached the client.
	ga := eventually(t, a, "node A", func(g map[string]float64) bool { return g["brain_http_forwarded_requests_total"+route] == 1 })
	gb := gauges(t, b)
	if got := ga["brain_http_requests_total"+route] + gb["brain_http_requests_total"+route] - before; got != 1 {
		t.Errorf("one forwarded message counted %v times in brain_http_requests_total over the nodes, want 1 (A %v, B %v)",
			got, ga["brain_http_requests_total"+route], gb["brain_http_requests_total"+route])
	}
	if gb["brain_http_requests_total"+route] != 1 {
		t.Errorf("node B, which the client sent the message to, counted it %v times, want 1", gb["brain_http_requests_total"+route])
	}
}
