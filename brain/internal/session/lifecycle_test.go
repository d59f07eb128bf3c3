package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

func TestEndAndDelete(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	ctx := context.Background()
	if err := h.engine.Delete(ctx, id); !errors.Is(err, ErrWrongState) || Code(err) != api.CodeConflict {
		t.Fatalf("delete of idle session: %v", err)
	}
	before := len(h.records(id))
	sum, err := h.engine.End(ctx, id)
	if err != nil || sum.Status != api.StatusEnded {
		t.Fatalf("end: %+v %v", sum, err)
	}
	recs := h.records(id)
	want := []string{"session_end_started", "environment_detach_started", "environment_detach_ended", "session_ended"}
	if got := kinds(recs[before:]); !reflect.DeepEqual(got, want) {
		t.Fatalf("end records = %v", got)
	}
	if d := h.envs.opsOf(envapi.RequestDetach); len(d) != 1 || d[0].Sequence != recs[before+1].Sequence {
		t.Fatalf("detach ops = %+v", d)
	}
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "late"}); !errors.Is(err, ErrWrongState) {
		t.Fatalf("send after end: %v", err)
	}
	if _, err := h.engine.Transcript(ctx, id); err != nil {
		t.Fatalf("transcript after end: %v", err)
	}
	if err := h.engine.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := len(h.envs.opsOf(envapi.RequestTeardown)); n != 1 {
		t.Fatalf("%d teardowns", n)
	}
	if _, err := h.engine.Summary(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("summary after delete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "sessions", id)); !os.IsNotExist(err) {
		t.Fatalf("session directory remains: %v", err)
	}
	if h.secret.Len() != 0 {
		t.Fatal("secrets remain after delete")
	}
}

func TestFailedDetachStillEnds(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	h.envs.mu.Lock()
	h.envs.behaviour["box"] = "fail"
	h.envs.mu.Unlock()
	sum, err := h.engine.End(context.Background(), id)
	if err != nil || sum.Status != api.StatusEnded {
		t.Fatalf("end: %+v %v", sum, err)
	}
	if len(ofKind(h.records(id), api.KindEnvironmentDetachFailed)) != 1 {
		t.Fatalf("records = %v", kinds(h.records(id)))
	}
	// A failed teardown keeps the session; a later delete may retry.
	if err := h.engine.Delete(context.Background(), id); err == nil {
		t.Fatal("delete succeeded although teardown failed")
	}
	if _, err := h.engine.Summary(context.Background(), id); err != nil {
		t.Fatalf("session removed after failed teardown: %v", err)
	}
	h.envs.mu.Lock()
	h.envs.behaviour["box"] = "echo"
	h.envs.mu.Unlock()
	if err := h.engine.Delete(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// TestPassivation: created sessions and finished turns hold no goroutine
// and no memory; reads do not keep a session; an idle TTL does.
func TestPassivation(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	ctx := context.Background()
	id := h.create(api.CreateSessionRequest{})
	runtime.GC()
	base := runtime.NumGoroutine()
	ids := make([]string, 1000)
	for i := range ids {
		sum, err := h.engine.Create(ctx, "", api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = sum.SessionID
	}
	if _, err := h.engine.Send(ctx, ids[0], api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := h.engine.Active(); n != 0 {
		t.Fatalf("%d sessions in memory after create and turn", n)
	}
	if g := runtime.NumGoroutine(); g > base+2 {
		t.Fatalf("goroutines %d, before %d", g, base)
	}
	if _, err := h.engine.Events(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.engine.Transcript(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	list, err := h.engine.List(ctx)
	if err != nil || len(list) != 1001 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if n := h.engine.Active(); n != 0 {
		t.Fatalf("reads kept %d sessions", n)
	}

	ttl := int64(0)
	kept := h.create(api.CreateSessionRequest{IdleTTLMs: &ttl})
	if _, err := h.engine.Send(ctx, kept, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := h.engine.Active(); n != 1 {
		t.Fatalf("idle_ttl_ms 0 kept %d sessions", n)
	}
	short := int64(20)
	brief := h.create(api.CreateSessionRequest{IdleTTLMs: &short})
	_ = brief
	deadline := time.Now().Add(10 * time.Second)
	for h.engine.Active() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := h.engine.Active(); n != 1 {
		t.Fatalf("idle TTL did not release: %d active", n)
	}
}

// checkpointed answers a session of turns text turns in a store under dir
// that checkpoints every 8 records, its transcript, and its checkpoint.
func checkpointed(t *testing.T, dir string, turns int) (h *harness, id string, want api.SessionTranscript, through uint64, payload []byte) {
	t.Helper()
	h = openHarness(t, dir, Config{CheckpointEvery: 8}, nil)
	id = h.create(api.CreateSessionRequest{})
	for i := 0; i < turns; i++ {
		if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	want, _ = h.engine.Transcript(context.Background(), id)
	through, payload, err := h.store.ReadCheckpoint(context.Background(), id)
	if err != nil || through < 8 {
		t.Fatalf("checkpoint through %d: %v", through, err)
	}
	return h, id, want, through, payload
}

func TestCheckpointReopen(t *testing.T) {
	dir := t.TempDir()
	h, id, want, _, _ := checkpointed(t, dir, 5)
	h.close()
	reopenGoesOn(t, dir, id, want)
}

// reopenGoesOn reopens the store under dir and fails unless session id's
// transcript is want and one more text turn adds its two messages.
func reopenGoesOn(t *testing.T, dir, id string, want api.SessionTranscript) {
	t.Helper()
	h := openHarness(t, dir, Config{CheckpointEvery: 8}, nil)
	got, err := h.engine.Transcript(context.Background(), id)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened transcript differs: %v", err)
	}
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "more"}); err != nil {
		t.Fatal(err)
	}
	got, _ = h.engine.Transcript(context.Background(), id)
	if len(got.Messages) != len(want.Messages)+2 {
		t.Fatalf("%d messages after one more turn, want %d", len(got.Messages), len(want.Messages)+2)
	}
}

func TestEventsPaging(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	for i := 0; i < 170; i++ { // 7 records per turn, 6 public
		if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var all []api.Event
	cursor := uint64(0)
	for {
		page, err := h.engine.Events(context.Background(), id, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) > api.MaxPageEvents {
			t.Fatalf("page of %d", len(page.Events))
		}
		if len(page.Events) == 0 {
			if page.NextCursor != cursor {
				t.Fatalf("empty page cursor %d, want %d", page.NextCursor, cursor)
			}
			break
		}
		all = append(all, page.Events...)
		cursor = page.NextCursor
	}
	if len(all) != 2+170*6 {
		t.Fatalf("%d public events", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Sequence <= all[i-1].Sequence {
			t.Fatal("events not strictly increasing")
		}
	}
}

func TestOnTurnEndRelease(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "release"})
	id := h.create(toolSession("release"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	h.waitEvent(id, 0, api.KindEnvironmentCallEnded)
	recs := h.records(id)
	turn := ofKind(recs, api.KindTurnStarted)[0].Sequence
	calls := h.envs.opsOf(envapi.RequestCall)
	if len(calls) != 1 || calls[0].Request.Name != "release" || string(calls[0].Request.Input) != `{"sequence":`+itoa(turn)+`}` {
		t.Fatalf("calls = %+v", calls)
	}
	if ofKind(recs, api.KindEnvironmentCallStarted)[0].Sequence < ofKind(recs, api.KindTurnEnded)[0].Sequence {
		t.Fatal("release started before the turn ended")
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// The creation record lists omitted tools and environments as [], never
// null (they default to []).
func TestCreateRecordDefaultsEmptyLists(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	first := h.records(id)[0]
	if first.Kind != api.KindSessionCreationStarted {
		t.Fatalf("first record %s", first.Kind)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(first.Data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "environments"} {
		if string(m[k]) != "[]" {
			t.Errorf("creation record %s = %s, want []", k, m[k])
		}
	}
}

// A turn that leaves a tool unfinished defers its turn-end release until
// the tool is closed; the engine's drain waits for that release.
func TestOnTurnEndReleaseWaitsForTools(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "releasereturner"})
	id := h.create(toolSession("releasereturner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo", "input": map[string]any{}}}, "reply": "later"})}); err != nil {
		t.Fatal(err)
	}
	tool := ofKind(h.records(id), api.KindToolCallStarted)[0].Sequence
	svc, err := h.engine.Execution(id, tool)
	if err != nil {
		t.Fatalf("the returned tool is not open: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		done <- h.engine.Close(cctx)
	}()
	select {
	case err := <-done:
		t.Fatalf("Close returned (%v) while a turn-end release waited for a tool", err)
	case <-time.After(50 * time.Millisecond):
	}
	if n := len(h.envs.opsOf(envapi.RequestCall)); n != 0 {
		t.Fatalf("release sent while the turn's tool was open (%d calls)", n)
	}
	if _, err := svc.Finish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drain: %v", err)
	}
	h.engine = nil
	recs := h.records(id)
	ended := ofKind(recs, api.KindToolCallEnded)
	started := ofKind(recs, api.KindEnvironmentCallStarted)
	if len(ended) != 1 || len(started) != 1 || len(ofKind(recs, api.KindEnvironmentCallEnded)) != 1 || started[0].Sequence < ended[0].Sequence {
		t.Fatalf("release not sent after the tool closed, or not answered: %v", kinds(recs))
	}
	turn := ofKind(recs, api.KindTurnStarted)[0].Sequence
	if calls := h.envs.opsOf(envapi.RequestCall); len(calls) != 1 || string(calls[0].Request.Input) != `{"sequence":`+itoa(turn)+`}` {
		t.Fatalf("release calls %+v", calls)
	}
}

// The built-in loop is recognised in every spelling of its implementation
// (the form sessions are created with, spaced JSON, no name) and nothing
// else is taken for it.
func TestIsBuiltin(t *testing.T) {
	for impl, want := range map[string]bool{
		string(builtinImplementation):                      true,
		`{ "name" : "default", "type" : "brain_builtin" }`: true,
		`{"type":"brain_builtin"}`:                         true,
		`{"type":"brain_builtin","name":"other"}`:          false,
		`{"type":"wasm","name":"default"}`:                 false,
		`{"type":"brain_builtin","name":"default"`:         false,
		``: false,
	} {
		if got := isBuiltin([]byte(impl)); got != want {
			t.Errorf("isBuiltin(%s) = %v, want %v", impl, got, want)
		}
	}
}

// A checkpoint whose frame checks out but whose projection the engine
// cannot go on from (an environment named without its state) is not
// taken: the session is folded from its journal. One whose maps are null
// is taken with them empty. Either way the session's turns go on.
func TestCheckpointProjectionNotTaken(t *testing.T) {
	for name, edit := range map[string]func(map[string]any){
		"environment without its state": func(p map[string]any) { p["envs"] = map[string]any{"ghost": nil} },
		"null maps": func(p map[string]any) {
			p["kv"], p["open"], p["envs"], p["returned"] = nil, nil, nil, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			h, id, want, through, payload := checkpointed(t, dir, 3)
			var p map[string]any
			if err := json.Unmarshal(payload, &p); err != nil {
				t.Fatal(err)
			}
			edit(p)
			payload, _ = json.Marshal(p)
			if err := h.store.WriteCheckpoint(context.Background(), id, through, payload); err != nil {
				t.Fatal(err)
			}
			h.close()
			reopenGoesOn(t, dir, id, want)
		})
	}
}

// A transcript_delta in the journal that keeps a negative number of
// messages is refused as damage when the session is folded, instead of
// taking the process down.
func TestNegativeKeepRefused(t *testing.T) {
	dir := t.TempDir()
	h := openHarness(t, dir, Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "m"}); err != nil {
		t.Fatal(err)
	}
	h.close()
	store, err := journal.OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	next, err := store.Next(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	bad := journal.Record{Kind: api.KindTranscriptDelta, Data: json.RawMessage(`{"keep":-1,"append":[],"saved":2}`)}
	if err := store.Append(context.Background(), id, next, []journal.Record{bad}); err != nil {
		t.Fatal(err)
	}
	_ = store.Close()
	h2 := openHarness(t, dir, Config{}, nil)
	_, err = h2.engine.Send(context.Background(), id, api.UserInput{Message: "more"})
	if !errors.Is(err, journal.ErrDamaged) || !strings.Contains(err.Error(), "keeps -1") {
		t.Fatalf("Send on a journal keeping -1 messages = %v, want the journal damaged", err)
	}
}
