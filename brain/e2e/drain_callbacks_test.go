package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// drainOutput is the value the gated tool finishes with.
const drainOutput = `"finished during drain"`

// drainFixture is the fixture with one more tool behaviour, "gated": its
// execute waits for gate "drain", then reports "drain_report" and a lost
// resource through the binding's reporter, emits "drain_progress" and
// finishes with drainOutput through its callback grant, reports those
// calls on calls and answers. The turn that dispatched it stays in flight until
// the finish.
type drainFixture struct {
	*fixture
	calls chan drainCalls
}

// drainCalls is what the gated tool's callback calls answered.
type drainCalls struct {
	reported, observed    uint64
	reportErr, observeErr error
	emitted, finished     uint64
	emitErr, finishErr    error
}

func newDrainFixture(t *testing.T) *drainFixture {
	t.Helper()
	d := &drainFixture{fixture: &fixture{later: make(chan error, 16)}, calls: make(chan drainCalls, 1)}
	d.fixture.Provider = envtest.NewProvider(t, envsdk.NewHandler(d, &envsdk.Options{Token: providerToken, StopGrace: 2 * time.Second}))
	return d
}

func (d *drainFixture) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var impl struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(x.Implementation, &impl)
	if impl.Kind != "gated" {
		return d.fixture.Execute(c, x)
	}
	ctx := c.Context()
	select {
	case <-d.Gate("drain"):
	case <-ctx.Done():
		d.report(drainCalls{emitErr: fmt.Errorf("the execute was stopped before the tool called back: %w", context.Cause(ctx))})
		return envapi.Receipt{}, context.Cause(ctx)
	}
	var r drainCalls
	r.reported, r.reportErr = c.Reporter().Event(ctx, "drain_report", map[string]string{"step": "after the signal"})
	r.observed, r.observeErr = c.Reporter().Result(ctx, envapi.Observation{Scope: envapi.ScopeResource, Resource: "disk", Code: envapi.CodeResourceLost, Message: "lost during the drain"}, nil)
	r.emitted, r.emitErr = x.Invocation.Emit(ctx, "drain_progress", map[string]string{"step": "after the signal"})
	out := envapi.OK(json.RawMessage(drainOutput))
	if r.emitErr == nil {
		r.finished, r.finishErr = x.Invocation.Finish(ctx, &out)
	}
	d.report(r)
	return envapi.Result(out.Value), nil
}

// report hands the first report to the test.
func (d *drainFixture) report(r drainCalls) {
	select {
	case d.calls <- r:
	default:
	}
}

// sendAsync runs a synchronous turn in the background; the channel gets
// its answer or the transport error.
func sendAsync(s *server, id, message string) <-chan sendAnswer {
	ch := make(chan sendAnswer, 1)
	b, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: message}})
	req, err := newRequest(s, "POST", "/v1/sessions/"+id+"/messages", string(b), "Idempotency-Key", key())
	if err != nil {
		ch <- sendAnswer{err: err}
		return ch
	}
	go func() {
		resp, err := httpClient.Do(req)
		if err != nil {
			ch <- sendAnswer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		ch <- sendAnswer{reply: reply{resp.StatusCode, resp.Header, body}, err: err}
	}()
	return ch
}

type sendAnswer struct {
	reply reply
	err   error
}

// TestDrainKeepsCallbacks: SIGTERM while a synchronous turn waits on a
// tool of an http environment. New work is refused, yet the reports the
// environment makes through its binding's reporter and the tool's emit
// and finish through its callback grant, made after the signal, succeed;
// the turn completes and its caller gets the answer, and the observation
// wakes the loop after it; the process exits 0 only after that, and the
// journal holds the reports, the emitted event, the finished outcome,
// turn_ended and the activation handed the observation, with nothing
// interrupted.
func TestDrainKeepsCallbacks(t *testing.T) {
	s := start(t, "")
	f := newDrainFixture(t)
	id := s.createSession(api.CreateSessionRequest{
		Environments: []api.Environment{f.env("box", nil)},
		Tools:        []api.Tool{tool("gated", "box", "gated")},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp := s.stream(ctx, id, "?after=0")
	defer resp.Body.Close()
	sent := sendAsync(s, id, toolTurn("gated"))

	var toolSeq uint64
	frames(resp.Body, func(fr frame) bool {
		if fr.Event != api.KindToolCallStarted {
			return true
		}
		var ev api.Event
		if err := json.Unmarshal([]byte(fr.Data), &ev); err != nil {
			t.Fatalf("frame %+v: %v", fr, err)
		}
		toolSeq = ev.Sequence
		return false
	})
	if toolSeq == 0 {
		t.Fatalf("the stream ended before the tool started\n%s", s.stderr)
	}
	x := f.waitFor(envapi.RequestExecute, 1)[0].Cmd.Operation
	if x.Sequence != toolSeq || x.Request.Callback == nil {
		t.Fatalf("execute %+v, want the tool call %d with a callback grant", x, toolSeq)
	}

	s.beginDrain(t)
	select {
	case a := <-sent:
		t.Fatalf("the turn answered before its tool finished: %d %s %v", a.reply.Status, a.reply.Body, a.err)
	case <-s.done:
		t.Fatalf("the process exited with the turn in flight: %v\n%s", s.waitErr, s.stderr)
	default:
	}

	// The tool answers only now, through its callback grant.
	f.Open("drain")
	var calls drainCalls
	select {
	case calls = <-f.calls:
	case <-time.After(30 * time.Second):
		t.Fatalf("the tool did not call back\n%s", s.stderr)
	}
	if calls.reportErr != nil || calls.observeErr != nil || calls.reported == 0 || calls.observed <= calls.reported {
		t.Fatalf("reports after SIGTERM: event %d %v, observation %d %v\n%s", calls.reported, calls.reportErr, calls.observed, calls.observeErr, s.stderr)
	}
	if calls.emitErr != nil || calls.finishErr != nil || calls.emitted == 0 || calls.finished <= calls.emitted {
		t.Fatalf("callbacks after SIGTERM: emit %d %v, finish %d %v\n%s", calls.emitted, calls.emitErr, calls.finished, calls.finishErr, s.stderr)
	}

	// The caller gets the turn's answer.
	var answer sendAnswer
	select {
	case answer = <-sent:
	case <-time.After(30 * time.Second):
		t.Fatalf("the turn did not answer after its tool finished\n%s", s.stderr)
	}
	if answer.err != nil || answer.reply.Status != 200 {
		t.Fatalf("send = %d %s %v\n%s", answer.reply.Status, answer.reply.Body, answer.err, s.stderr)
	}
	var sum api.SessionSummary
	if err := json.Unmarshal(answer.reply.Body, &sum); err != nil || sum.Status != api.StatusIdle || sum.LastSequence <= calls.finished {
		t.Fatalf("send answered %s (%v), want the idle session after the finish at %d", answer.reply.Body, err, calls.finished)
	}

	// The open stream sees the tool's event, its outcome and the turn's
	// end, then is closed.
	var tail []api.Event
	ended := frames(resp.Body, func(fr frame) bool {
		var ev api.Event
		if err := json.Unmarshal([]byte(fr.Data), &ev); err != nil {
			t.Fatalf("frame %+v: %v", fr, err)
		}
		tail = append(tail, ev)
		return true
	})
	if !ended {
		t.Fatalf("the stream did not end")
	}
	if k := kinds(tail); !slices.Contains(k, "drain_progress") || !slices.Contains(k, api.KindToolCallEnded) || !slices.Contains(k, api.KindTurnEnded) {
		t.Fatalf("stream during drain saw %v", k)
	}
	// The scripted model answers the tool results it got.
	if turn := ofKind(tail, api.KindTurnEnded); dataField[string](t, turn[len(turn)-1], "result") != "["+drainOutput+"]" {
		t.Errorf("the turn's answer does not carry the tool's outcome: %s", turn[len(turn)-1].Data)
	}

	s.waitDrained(t)

	// The journal holds the emitted event, the finished outcome and the
	// turn's end; nothing was interrupted.
	evs := start(t, s.DataDir).drainedEvents(t, id)
	var reported, observed, emitted, end *api.Event
	for i := range evs {
		switch ev := &evs[i]; ev.Sequence {
		case calls.reported:
			reported = ev
		case calls.observed:
			observed = ev
		case calls.emitted:
			emitted = ev
		case calls.finished:
			end = ev
		}
	}
	if reported == nil || reported.EventType != "drain_report" || reported.Origin == nil || reported.Origin.Kind != api.OriginEnvironment {
		t.Errorf("reported event at %d: %+v", calls.reported, reported)
	}
	if observed == nil || observed.EventType != api.KindOutputEmitted || !strings.Contains(string(observed.Data), "lost during the drain") {
		t.Errorf("observation at %d: %+v", calls.observed, observed)
	}
	if emitted == nil || emitted.EventType != "drain_progress" || emitted.Origin == nil || emitted.Origin.Kind != api.OriginTool || emitted.Origin.Sequence != toolSeq {
		t.Errorf("emitted event at %d: %+v", calls.emitted, emitted)
	}
	if end == nil || end.EventType != api.KindToolCallEnded || dataField[uint64](t, *end, "sequence") != toolSeq || dataField[bool](t, *end, "is_error") ||
		!jsonEqual(dataField[json.RawMessage](t, *end, "outcome"), []byte(`{"status":"ok","value":`+drainOutput+`}`)) {
		t.Errorf("record at the finish's sequence %d: %+v", calls.finished, end)
	}
	if turn := ofKind(evs, api.KindTurnEnded); len(turn) != 1 || turn[0].Sequence <= calls.finished || dataField[string](t, turn[0], "result") != "["+drainOutput+"]" {
		t.Fatalf("turn_ended %+v, want one after the finish at %d answering the tool's outcome", turn, calls.finished)
	}
	// The observation woke the loop after the turn, and the drain waited
	// for that activation.
	woke := false
	for _, ev := range ofKind(evs, api.KindActivationStarted) {
		woke = woke || slices.Contains(dataField[[]uint64](t, ev, "events"), calls.observed)
	}
	if !woke {
		t.Fatalf("no activation was handed the observation at %d: %v", calls.observed, kinds(evs))
	}
}
