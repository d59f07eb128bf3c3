package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// runLoop is a remote agentloop written with envsdk. A turn reads and
// writes kv, calls the model, dispatches the tools the model asks for,
// calls the model again with their results and saves the transcript; its
// result lists what it observed. The message "fail" fails the execute,
// "hang" waits to be cancelled. The first event-triggered activation
// fails; later ones succeed and report how many events they got.
func (f *fixture) runLoop(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	ctx := c.Context()
	inv := x.Invocation
	var in api.TurnInput
	if err := json.Unmarshal(x.Input, &in); err != nil {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, err.Error())
	}
	if in.Input == nil {
		first := f.eventRuns.Add(1) == 1
		if first {
			return envapi.Receipt{}, envsdk.Fail("loop_refused", "the first event activation fails")
		}
		return envsdk.Output(map[string]any{"result": map[string]any{"events": len(in.Events)}})
	}
	switch in.Input.Message {
	case "fail":
		return envapi.Receipt{}, envsdk.Fail("loop_broke", "scripted loop failure")
	case "hang":
		<-ctx.Done()
		return envapi.Receipt{}, context.Cause(ctx)
	}
	var steps []string
	read := func() error {
		v, found, err := inv.KVRead(ctx, "a")
		if err != nil {
			return err
		}
		steps = append(steps, fmt.Sprintf("read %v %s", found, v))
		return nil
	}
	if err := read(); err != nil {
		return envapi.Receipt{}, err
	}
	if _, err := inv.KVPut(ctx, "a", nil); err != nil {
		return envapi.Receipt{}, err
	}
	if err := read(); err != nil {
		return envapi.Receipt{}, err
	}
	msgs := append(in.Transcript, api.UserMessage(*in.Input))
	var res api.ModelResult
	for round := 0; ; round++ {
		raw, err := inv.Model(ctx, api.ModelRequest{Messages: msgs})
		if err != nil {
			return envapi.Receipt{}, err
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return envapi.Receipt{}, err
		}
		msgs = append(msgs, res.Message)
		var calls []envapi.ToolInvocation
		for _, b := range res.Message.Content {
			if b.Type == api.BlockToolUse {
				calls = append(calls, envapi.ToolInvocation{CallID: b.ID, Name: b.Name, Environment: "box", Input: b.Input})
			}
		}
		if len(calls) == 0 || round > 0 {
			break
		}
		returns, err := inv.Dispatch(ctx, calls)
		if err != nil {
			return envapi.Receipt{}, err
		}
		var results []api.ContentBlock
		for _, r := range returns {
			steps = append(steps, fmt.Sprintf("tool %s finished %v", r.CallID, r.Finished))
			content, _ := json.Marshal(r)
			results = append(results, api.ToolResultBlock(r.CallID, content, false))
		}
		msgs = append(msgs, api.Message{Role: api.RoleUser, Content: results})
	}
	if _, err := inv.SetTranscript(ctx, msgs); err != nil {
		return envapi.Receipt{}, err
	}
	if _, err := inv.KVDelete(ctx, "a"); err != nil {
		return envapi.Receipt{}, err
	}
	if err := read(); err != nil {
		return envapi.Receipt{}, err
	}
	return envsdk.Output(map[string]any{"result": map[string]any{"steps": steps, "reply": res.Message.Text()}})
}

// TestRemoteAgentloop: an agentloop on an http environment runs as an
// execute per activation with the agentloop callback grant (case 50 over
// HTTP included).
func TestRemoteAgentloop(t *testing.T) {
	dir := t.TempDir()
	b := openBrain(t, dir, brain.Limits{MaxTurn: time.Minute})
	c := newClient(t, b.URL)
	f := newFixture(t)
	id := c.create(api.CreateSessionRequest{
		Agentloop:    &api.Agentloop{Implementation: json.RawMessage(`{"kind":"agentloop"}`), Environment: "agent"},
		Environments: []api.Environment{f.env("agent", nil), f.env("box", nil)},
		Tools:        []api.Tool{tool("echo", "box", "echo")},
	}).SessionID

	status, body := c.send(id, script(map[string]any{"tool_calls": []map[string]any{{"name": "echo", "input": map[string]int{"n": 7}}}, "reply": "all done"}))
	if status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	execs := f.received(envapi.RequestExecute)
	if len(execs) != 2 {
		t.Fatalf("%d executes, want the loop's and the tool's", len(execs))
	}
	loop := execs[0].Cmd.Operation
	evs := c.events(id)
	act := ofKind(evs, api.KindActivationStarted)[0]
	req := loop.Request
	if loop.Environment != "agent" || loop.Sequence != act.Sequence || string(req.Implementation) != `{"kind":"agentloop"}` ||
		req.Callback == nil || !reflect.DeepEqual(req.Callback.Methods, envapi.AgentloopMethods()) ||
		req.DeadlineMs == nil || *req.DeadlineMs <= 0 || *req.DeadlineMs > 60000 {
		t.Fatalf("loop execute %+v", loop)
	}
	if !strings.HasSuffix(req.Callback.URL, "/executions/"+jsonNum(act.Sequence)+"/call") {
		t.Errorf("callback url %s", req.Callback.URL)
	}
	ended := ofKind(evs, api.KindTurnEnded)
	var result struct {
		Steps []string `json:"steps"`
		Reply string   `json:"reply"`
	}
	if len(ended) != 1 {
		t.Fatalf("events %s", kindsLine(evs))
	}
	if err := json.Unmarshal(dataField[json.RawMessage](t, ended[0], "result"), &result); err != nil {
		t.Fatal(err)
	}
	want := []string{"read false ", "read true null", "tool call_1 finished true", "read false "}
	if !reflect.DeepEqual(result.Steps, want) || result.Reply != "all done" {
		t.Errorf("loop saw %q reply %q, want %q", result.Steps, result.Reply, want)
	}
	if n := len(ofKind(evs, api.KindModelCallStarted)); n != 2 {
		t.Errorf("%d model calls", n)
	}
	if started := ofKind(evs, api.KindToolCallStarted); len(started) != 1 || execs[1].Cmd.Operation.Sequence != started[0].Sequence {
		t.Errorf("tool dispatch: %s", kindsLine(evs))
	}
	var tr api.SessionTranscript
	c.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+id+"/transcript", nil, &tr)
	if len(tr.Messages) != 4 || tr.Messages[3].Text() != "all done" {
		t.Errorf("saved transcript %+v", tr.Messages)
	}
	// The callback ended with its activation.
	if status, _ := callGrantBody(t, req.Callback, "kv_read", "a"); status != http.StatusUnauthorized {
		t.Errorf("callback after the activation: %d, want 401", status)
	}

	// A failing execute fails the turn as agentloop_failed.
	status, body = c.send(id, "fail")
	if status == http.StatusOK || !strings.Contains(string(body), api.FailureAgentloopFailed) {
		t.Fatalf("failing loop: %d %s", status, body)
	}
	if tf := ofKind(c.events(id), api.KindTurnFailed); len(tf) != 1 || dataField[string](t, tf[0], "code") != api.FailureAgentloopFailed {
		t.Fatalf("turn_failed %+v", tf)
	}

	// An actionable observation wakes the loop; the failed activation
	// leaves the batch pending without a retry of its own, and the next
	// activation, woken by a newer observation, gets it again.
	rep := f.received(envapi.RequestSetup)[0].Cmd.Operation.Reporter
	observe := func() uint64 {
		return reportGrant(t, rep, map[string]any{"type": "result", "output": map[string]any{
			"observation": map[string]any{"scope": "resource", "resource": "r", "code": "lost", "message": "m"}}})
	}
	eventRuns := func() (runs [][]uint64) {
		for _, r := range f.received(envapi.RequestExecute) {
			var in api.TurnInput
			_ = json.Unmarshal(r.Cmd.Operation.Request.Input, &in)
			if r.Cmd.Operation.Environment == "agent" && in.Input == nil {
				var seqs []uint64
				for _, ev := range in.Events {
					seqs = append(seqs, ev.Sequence)
				}
				runs = append(runs, seqs)
			}
		}
		return runs
	}
	obs := observe()
	c.waitEvent(id, func(ev api.Event) bool { return ev.EventType == api.KindActivationFailed && ev.Sequence > obs })
	time.Sleep(300 * time.Millisecond) // 60 coalescing windows
	if runs := eventRuns(); len(runs) != 1 {
		t.Fatalf("event activations %v after the first failed, want it alone", runs)
	}
	obs2 := observe()
	c.waitEvent(id, func(ev api.Event) bool { return ev.EventType == api.KindActivationEnded && ev.Sequence > obs2 })
	if runs, want := eventRuns(), [][]uint64{{obs}, {obs, obs2}}; !reflect.DeepEqual(runs, want) {
		t.Fatalf("event activations were handed %v, want %v", runs, want)
	}
	// Cancel abandons the execute and revokes its callback (after the
	// observations: an interrupt holds automatic activations back until
	// the next message).
	turn := c.submit(id, "hang")
	hang := f.waitFor(envapi.RequestExecute, 6)[5].Cmd.Operation // after the loop's, the tool's, the failed one and two event runs
	if hang.Request.Callback.Token == req.Callback.Token {
		t.Error("a callback token was reused")
	}
	c.must(http.StatusNoContent, http.MethodPost, "/v1/sessions/"+id+"/cancel", nil, nil)
	tf := c.waitEvent(id, withData(api.KindTurnFailed, "sequence", turn))
	if code := dataField[string](t, tf, "code"); code != api.FailureCancelled {
		t.Errorf("cancelled remote turn failed with %q", code)
	}
	if status, _ := callGrantBody(t, hang.Request.Callback, "kv_read", "a"); status != http.StatusUnauthorized {
		t.Errorf("callback of a cancelled activation: %d, want 401", status)
	}
	// The interrupt holds automatic activations back until the next
	// message, also once the session is passivated (it is, once the
	// cancel's delivery settled): an observation now wakes no loop, and
	// the next message's activation gets it.
	c.waitEvent(id, func(ev api.Event) bool { return ev.EventType == api.KindToolCancelEnded && ev.Sequence > turn })
	obs3 := observe()
	time.Sleep(300 * time.Millisecond)
	if runs := eventRuns(); len(runs) != 2 {
		t.Fatalf("event activations %v after the interrupt, want none new", runs)
	}
	if status, body := c.send(id, script(map[string]any{"reply": "back"})); status != http.StatusOK {
		t.Fatalf("send after the interrupt: %d %s", status, body)
	}
	all := f.received(envapi.RequestExecute)
	var next api.TurnInput
	if err := json.Unmarshal(all[len(all)-1].Cmd.Operation.Request.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Input == nil || len(next.Events) != 1 || next.Events[0].Sequence != obs3 {
		t.Fatalf("the message's activation got input %+v and events %+v, want the observation at %d", next.Input, next.Events, obs3)
	}

	evs = c.events(id)
	if n := len(ofKind(evs, api.KindActivationFailed)); n != 3 {
		t.Errorf("%d activation_failed (fail, cancel, first event run), want 3: %s", n, kindsLine(evs))
	}

	// case 50: the kv history stays in the journal.
	b.close()
	store, err := journal.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recs, err := store.Read(context.Background(), id, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kv []string
	for _, r := range recs {
		if r.Kind == api.KindKVSet || r.Kind == api.KindKVDelete {
			kv = append(kv, r.Kind+" "+string(r.Data))
		}
	}
	// Each of the two turns that ran to their end wrote it once.
	once := []string{`kv_set {"key":"a","value":null}`, `kv_delete {"key":"a"}`}
	if want := append(once, once...); !reflect.DeepEqual(kv, want) {
		t.Errorf("kv history %q, want %q", kv, want)
	}
}

// reportGrant POSTs a report to a reporter grant and answers its sequence.
func reportGrant(t *testing.T, g *envapi.Grant, body any) uint64 {
	t.Helper()
	status, raw := postGrant(t, g.URL, g.Token, body)
	var out struct {
		Sequence uint64 `json:"sequence"`
	}
	if err := json.Unmarshal(raw, &out); status != http.StatusOK || err != nil {
		t.Fatalf("report = %d %s", status, raw)
	}
	return out.Sequence
}
