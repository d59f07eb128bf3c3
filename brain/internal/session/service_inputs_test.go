package session

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// set_transcript takes a message array: a call whose input is missing or
// null (a remote loop that left the field out) is refused as invalid and
// leaves the saved transcript as it was, rather than saving an empty one.
func TestSetTranscriptNeedsMessageArray(t *testing.T) {
	var codes []string
	loops := map[string]agentloop.Func{"bad": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		svc := a.(Services)
		for _, input := range []json.RawMessage{nil, json.RawMessage(`null`), json.RawMessage(`{}`), json.RawMessage(`"x"`)} {
			_, err := svc.Call(ctx, envapi.MethodSetTranscript, input)
			codes = append(codes, Code(err))
		}
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("bad"),
		Transcript: []api.Message{api.UserMessage(api.UserInput{Message: "keep me"})}})
	before := len(h.records(id))
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	for i, c := range codes {
		if c != api.CodeInvalidRequest {
			t.Errorf("set_transcript call %d answered %q, want %s", i, c, api.CodeInvalidRequest)
		}
	}
	tr, err := h.engine.Transcript(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 1 || tr.Messages[0].Text() != "keep me" {
		t.Fatalf("transcript after refused calls = %+v", tr.Messages)
	}
	if recs := ofKind(h.records(id)[before:], api.KindTranscriptDelta); len(recs) != 0 {
		t.Fatalf("a refused set_transcript appended %d transcript_delta records", len(recs))
	}
}

// model takes a ModelRequest, whose messages are required: an input
// without them is refused before any model_call_started is committed, and
// nothing is sent to the model.
func TestModelNeedsMessages(t *testing.T) {
	var codes []string
	loops := map[string]agentloop.Func{"bad": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		svc := a.(Services)
		for _, input := range []json.RawMessage{nil, json.RawMessage(`null`), json.RawMessage(`{}`), json.RawMessage(`{"system":"s"}`)} {
			_, err := svc.Call(ctx, envapi.MethodModel, input)
			codes = append(codes, Code(err))
		}
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("bad")})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	for i, c := range codes {
		if c != api.CodeInvalidRequest {
			t.Errorf("model call %d answered %q, want %s", i, c, api.CodeInvalidRequest)
		}
	}
	if n := len(ofKind(h.records(id), api.KindModelCallStarted)); n != 0 {
		t.Fatalf("%d model calls started for requests without messages", n)
	}
}

// A tool's result is an emission of the turn (emitResult): it is counted
// in BRAIN_MAX_EMITTED_BYTES with the turn's events, and one past the
// budget is refused with emit_limit and not appended.
func TestToolResultChargesEmissionBudget(t *testing.T) {
	h := newHarness(t, Config{Limits: Limits{MaxEmittedBytes: 200}}, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: oneCall()}); err != nil {
		t.Fatal(err)
	}
	toolSeq := ofKind(h.records(id), api.KindToolCallStarted)[0].Sequence
	svc, err := h.engine.Execution(id, toolSeq)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"status":"ok","value":"` + strings.Repeat("x", 1024) + `"}`
	before := len(h.records(id))
	_, err = svc.Call(ctx, envapi.MethodResult, json.RawMessage(big))
	if Code(err) != api.CodeEmitLimit {
		t.Fatalf("a 1 KiB result under a 200-byte budget answered %v, want emit_limit", err)
	}
	if n := len(ofKind(h.records(id)[before:], api.KindToolResultEmitted)); n != 0 {
		t.Fatalf("%d results past the budget were appended", n)
	}
	// A small one still fits, and the tool can finish.
	if _, err := svc.Call(ctx, envapi.MethodResult, json.RawMessage(`{"status":"ok","value":1}`)); err != nil {
		t.Fatalf("small result: %v", err)
	}
	if _, err := svc.Call(ctx, envapi.MethodFinish, json.RawMessage(`null`)); err != nil {
		t.Fatalf("finish: %v", err)
	}
}

// The budget bounds the serialized event kinds and payloads: what the
// events API serves of a turn's extension events never exceeds it, even
// for payloads whose characters are written escaped.
func TestEmissionBudgetCountsSerializedPayload(t *testing.T) {
	const limit = 300
	var errs []error
	payload := `"` + strings.Repeat("<&>", 60) + `"` // 182 bytes as sent
	loops := map[string]agentloop.Func{"emit": emitLoop(&errs, []byte("note "+payload))}
	h := newHarness(t, Config{Loops: testLoops(loops), Limits: Limits{MaxEmittedBytes: limit}}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("emit")})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	page, err := h.engine.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, ev := range page.Events {
		if ev.Origin != nil {
			total += len(ev.EventType) + len(ev.Data)
		}
	}
	if total > limit {
		t.Fatalf("the turn's extension events serialize to %d bytes, over the %d-byte budget (emit answered %v)", total, limit, errs)
	}
}

// gatedStore holds the first Append after arm until open is closed.
type gatedStore struct {
	journal.Store
	armed   atomic.Bool
	entered chan struct{}
	open    chan struct{}
}

func (g *gatedStore) Append(ctx context.Context, session string, expectedNext uint64, records []journal.Record) error {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.open
	}
	return g.Store.Append(ctx, session, expectedNext, records)
}

// A loop's mutation that reaches Brain while its activation is being
// completed is refused: the token's authority ends with the activation,
// so no KV change is journalled after activation_ended on its behalf.
func TestLoopMutationRacingCompletionIsRefused(t *testing.T) {
	dir := t.TempDir()
	store, err := journal.OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	gs := &gatedStore{Store: store, entered: make(chan struct{}), open: make(chan struct{})}
	late := make(chan error, 1)
	loops := map[string]agentloop.Func{"late": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		svc := a.(Services)
		gs.armed.Store(true)
		// This emission holds the session while its commit is gated.
		go func() { _, _ = svc.Emit(ctx, "hold", json.RawMessage(`{}`)) }()
		<-gs.entered
		go func() {
			// The activation's end is already waiting for the session
			// when this call arrives.
			time.Sleep(100 * time.Millisecond)
			go func() {
				time.Sleep(100 * time.Millisecond)
				close(gs.open)
			}()
			_, err := svc.Call(context.Background(), envapi.MethodKVPut, json.RawMessage(`{"key":"late","value":1}`))
			late <- err
		}()
		return api.TurnOutput{}, nil
	}}
	h := &harness{t: t, dir: dir, store: store, envs: newFakeEnvs(nil), secret: NewMemSecrets()}
	e, err := New(Config{Store: gs, Environments: h.envs, Secrets: h.secret, Loops: testLoops(loops)})
	if err != nil {
		t.Fatal(err)
	}
	h.engine = e
	h.envs.engine = e
	t.Cleanup(h.close)
	keep := int64(0) // the session stays in memory between turns
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("late"), IdleTTLMs: &keep})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	callErr := <-late
	recs := h.records(id)
	ended := ofKind(recs, api.KindActivationEnded)
	if len(ended) != 1 {
		t.Fatalf("records = %v", kinds(recs))
	}
	within := false
	for _, r := range recs {
		if r.Kind == api.KindKVSet && r.Sequence > ended[0].Sequence {
			t.Fatalf("kv_put answered %v and was journalled at %d, after activation_ended %d: %v", callErr, r.Sequence, ended[0].Sequence, kinds(recs))
		}
		within = within || r.Kind == api.KindKVSet
	}
	if callErr == nil && !within {
		t.Fatalf("kv_put succeeded but nothing was journalled within the activation: %v", kinds(recs))
	}
	if callErr != nil && Code(callErr) != api.CodeNotGranted {
		t.Fatalf("kv_put after the activation ended answered %v (%s), want not_granted", callErr, Code(callErr))
	}
}

// kv_put takes {key, value}: a stored JSON null is "value": null, and an
// input without a value is refused rather than stored as null, so that a
// later kv_read still finds the key absent.
func TestKVPutNeedsValue(t *testing.T) {
	var steps []string
	loops := map[string]agentloop.Func{"kv": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		svc := a.(Services)
		for _, c := range [][2]string{{"kv_put", `{"key":"a"}`}, {"kv_read", `"a"`}, {"kv_put", `{"key":"a","value":null}`}, {"kv_read", `"a"`}} {
			out, err := svc.Call(ctx, c[0], json.RawMessage(c[1]))
			if err != nil {
				steps = append(steps, c[0]+" error "+Code(err))
				continue
			}
			if c[0] == "kv_put" {
				out = json.RawMessage("seq")
			}
			steps = append(steps, c[0]+" "+string(out))
		}
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("kv")})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"kv_put error invalid_request", "kv_read {}", "kv_put seq", `kv_read {"value":null}`}
	if strings.Join(steps, "\n") != strings.Join(want, "\n") {
		t.Fatalf("steps = %q\nwant    %q", steps, want)
	}
	if n := len(ofKind(h.records(id), api.KindKVSet)); n != 1 {
		t.Fatalf("%d kv_set records, want 1", n)
	}
}
