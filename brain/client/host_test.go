package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

var objectSchema = json.RawMessage(`{"type":"object"}`)

// hostSession creates a session whose tools run on the client's host.
func hostSession(t *testing.T, c *client.Client, h *client.Host, tools ...string) *client.Session {
	t.Helper()
	req := scripted
	req.Environments = []api.Environment{h.Environment("local")}
	for _, name := range tools {
		req.Tools = append(req.Tools, api.Tool{Name: name, Description: name, InputSchema: objectSchema,
			Placements: map[string]api.Placement{"local": {Implementation: json.RawMessage(`{}`)}}})
	}
	s, err := c.Sessions.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func toolScript(calls ...string) string {
	var parts []string
	for _, c := range calls {
		parts = append(parts, `{"name":"`+c+`","input":{}}`)
	}
	return `{"tool_calls":[` + strings.Join(parts, ",") + `]}`
}

func events(t *testing.T, s *client.Session) []api.Event {
	t.Helper()
	var out []api.Event
	for ev, err := range s.Events(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func ofKind(evs []api.Event, kind string) []api.Event {
	var out []api.Event
	for _, ev := range evs {
		if ev.EventType == kind {
			out = append(out, ev)
		}
	}
	return out
}

func outcomeOf(t *testing.T, ev api.Event) api.Outcome {
	t.Helper()
	var e api.ToolCallEnded
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		t.Fatal(err)
	}
	return e.Outcome
}

// TestHostTool serves a tool from this process: its result reaches the
// model, its event carries the tool origin on pages and streams, and the
// environment is listed through environment control.
func TestHostTool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.Host(ctx); again != h || !strings.HasPrefix(h.ID, "host_") {
		t.Fatalf("Host = %v then %v", h, again)
	}
	h.Handle("add", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		if _, err := call.Emit(ctx, "progress", map[string]int{"done": 1}); err != nil {
			return api.Outcome{}, err
		}
		return client.OK(map[string]any{"sum": 3, "tool": call.Name}), nil
	})
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "add")
	if _, err := s.Send(context.Background(), api.UserInput{Message: toolScript("add")}); err != nil {
		t.Fatal(err)
	}
	tr, _ := s.Transcript(ctx)
	if last := tr.Messages[len(tr.Messages)-1].Text(); !strings.Contains(last, `"sum":3`) {
		t.Fatalf("final answer %q lacks the tool's value", last)
	}
	evs := events(t, s)
	started := ofKind(evs, api.KindToolCallStarted)
	ended := ofKind(evs, api.KindToolCallEnded)
	progress := ofKind(evs, "progress")
	if len(started) != 1 || len(ended) != 1 || len(progress) != 1 {
		t.Fatalf("events: %d started, %d ended, %d progress", len(started), len(ended), len(progress))
	}
	if o := outcomeOf(t, ended[0]); o.Status != api.OutcomeOK {
		t.Fatalf("outcome %+v", o)
	}
	if o := progress[0].Origin; o == nil || o.Kind != api.OriginTool || o.Sequence != started[0].Sequence {
		t.Fatalf("page origin = %+v, want tool %d", o, started[0].Sequence)
	}
	fctx, stop := context.WithCancel(ctx)
	for ev, err := range s.Events(fctx, progress[0].Sequence-1, client.Follow()) {
		if err != nil {
			t.Fatal(err)
		}
		if o := ev.Origin; o == nil || o.Kind != api.OriginTool || o.Sequence != started[0].Sequence {
			t.Fatalf("stream origin = %+v", o)
		}
		break
	}
	stop()
	views, err := s.ListEnvironments(ctx)
	if err != nil || len(views) != 1 || views[0].Reference.Name != "local" || views[0].State != "ready" {
		t.Fatalf("ListEnvironments = %+v, %v", views, err)
	}
	v, err := s.GetEnvironment(ctx, client.EnvironmentRef{Name: "local", Sequence: views[0].Reference.Sequence})
	if err != nil || v.Reference != views[0].Reference {
		t.Fatalf("GetEnvironment = %+v, %v", v, err)
	}
	var ae *api.ApiError
	if _, err := s.GetEnvironment(ctx, client.EnvironmentRef{Name: "local", Sequence: views[0].Reference.Sequence + 100}); !errors.As(err, &ae) {
		t.Fatalf("GetEnvironment of a wrong incarnation = %v", err)
	}
	if _, err := s.CallMethod(ctx, "local", "inspect", nil); !errors.As(err, &ae) {
		t.Fatalf("CallMethod on a host environment = %v, want a typed error", err)
	}
}

// TestHostOutcomes checks the outcome rules of host tools: the deadline
// ends the handler's ctx and the call as timeout, an interrupt sends
// cancel_tool and the call ends cancelled, a tool nobody serves fails
// clearly, and no connected host means an error without any command.
func TestHostOutcomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{Limits: brain.Limits{MaxTool: 400 * time.Millisecond}})
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	causes := make(chan error, 4)
	h.Handle("slow", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return client.OK("late"), nil
	})
	h.Connected(ctx)

	t.Run("deadline", func(t *testing.T) {
		s := hostSession(t, c, h, "slow")
		if _, err := s.Send(context.Background(), api.UserInput{Message: toolScript("slow")}); err != nil {
			t.Fatal(err)
		}
		if cause := <-causes; !errors.Is(cause, context.DeadlineExceeded) {
			t.Fatalf("handler ctx ended with %v", cause)
		}
		if o := outcomeOf(t, ofKind(events(t, s), api.KindToolCallEnded)[0]); o.Status != api.OutcomeTimeout {
			t.Fatalf("outcome %+v, want timeout", o)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		c2, _ := start(t, brain.Config{})
		h2, _ := c2.Host(ctx)
		h2.Handle("slow", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return client.OK("late"), nil
		})
		h2.Connected(ctx)
		s := hostSession(t, c2, h2, "slow")
		rec, err := s.Submit(ctx, api.UserInput{Message: toolScript("slow")})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, s, api.KindToolCallStarted)
		if err := s.Interrupt(ctx); err != nil {
			t.Fatal(err)
		}
		if cause := <-causes; !errors.Is(cause, client.ErrCancelTool) {
			t.Fatalf("handler ctx ended with %v, want ErrCancelTool", cause)
		}
		waitFor(t, s, api.KindToolCancelEnded)
		evs := events(t, s)
		if o := outcomeOf(t, ofKind(evs, api.KindToolCallEnded)[0]); o.Status != api.OutcomeCancelled {
			t.Fatalf("outcome %+v, want cancelled", o)
		}
		_ = rec
	})
	t.Run("unserved", func(t *testing.T) {
		s := hostSession(t, c, h, "nobody")
		if _, err := s.Send(context.Background(), api.UserInput{Message: toolScript("nobody")}); err != nil {
			t.Fatal(err)
		}
		o := outcomeOf(t, ofKind(events(t, s), api.KindToolCallEnded)[0])
		if o.Status != api.OutcomeFailed || o.Error.Code != "unknown_tool" {
			t.Fatalf("outcome %+v", o)
		}
	})
	t.Run("not-connected", func(t *testing.T) {
		c3, _ := start(t, brain.Config{})
		h3, _ := c3.Host(ctx)
		h3.Connected(ctx)
		s := hostSession(t, c3, h3, "slow")
		other := c3.WithToken("tok")
		defer other.Close()
		c3.Close() // the host goes away; its registration stays
		o3 := other.Sessions.Open(s.ID)
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := o3.Send(context.Background(), api.UserInput{Message: toolScript("slow")}); err != nil {
				t.Fatal(err)
			}
			o := outcomeOf(t, ofKind(events(t, o3), api.KindToolCallEnded)[0])
			if o.Status == api.OutcomeFailed && o.Error.Code == "host_not_connected" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("outcome %+v, want host_not_connected", o)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

func waitFor(t *testing.T, s *client.Session, kind string) api.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if evs := ofKind(events(t, s), kind); len(evs) > 0 {
			return evs[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s event", kind)
	return api.Event{}
}

// TestHostResultThenFinish posts a result and returns while the handler
// goes on; the call finishes later with the handler's outcome, and the
// loop saw the returned result already.
func TestHostResultThenFinish(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	h, _ := c.Host(ctx)
	release := make(chan struct{})
	var model atomic.Value
	h.Handle("bg", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		res, err := call.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "from the tool"})}})
		if err != nil {
			return api.Outcome{}, err
		}
		model.Store(res.Message.Text())
		first := client.OK("partial")
		if _, err := call.Result(ctx, first); err != nil {
			return api.Outcome{}, err
		}
		if _, err := call.Returned(ctx, &first); err != nil {
			return api.Outcome{}, err
		}
		<-release
		return client.OK("complete"), nil
	})
	h.Connected(ctx)
	s := hostSession(t, c, h, "bg")
	if _, err := s.Send(context.Background(), api.UserInput{Message: toolScript("bg")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := model.Load().(string); got != "echo: from the tool" {
		t.Fatalf("tool's model call answered %q", got)
	}
	evs := events(t, s)
	if len(ofKind(evs, api.KindToolCallEnded)) != 0 || len(ofKind(evs, api.KindToolCallReturned)) != 1 || len(ofKind(evs, api.KindToolResultEmitted)) != 1 {
		t.Fatalf("before finish: %v", kindsOf(evs))
	}
	close(release)
	o := outcomeOf(t, waitFor(t, s, api.KindToolCallEnded))
	if o.Status != api.OutcomeOK || string(o.Value) != `"complete"` {
		t.Fatalf("finished with %+v", o)
	}
}

func kindsOf(evs []api.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.EventType)
	}
	return out
}

// TestOwnedChildOfHostTool is the seed's owning host tool: it passes its
// handler's ctx to child.Send. Interrupting the parent cancels the
// handler, Send interrupts the child and returns once that is accepted;
// the child's turn ends cancelled and no child tool runs afterwards.
func TestOwnedChildOfHostTool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	h, _ := c.Host(ctx)
	var childRuns atomic.Int32
	h.Handle("child_tool", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		childRuns.Add(1)
		return client.OK("ran"), nil
	})
	childReady := make(chan *client.Session, 1)
	sendErr := make(chan error, 1)
	h.Handle("delegate", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		child := hostSession(t, c, h, "child_tool")
		childReady <- child
		_, err := child.Send(ctx, api.UserInput{Message: `{"delay_ms":600,"tool_calls":[{"name":"child_tool","input":{}}]}`})
		sendErr <- err
		return api.Outcome{}, err
	})
	h.Connected(ctx)
	parent := hostSession(t, c, h, "delegate")
	if _, err := parent.Submit(ctx, api.UserInput{Message: toolScript("delegate")}); err != nil {
		t.Fatal(err)
	}
	child := <-childReady
	waitFor(t, child, api.KindTurnStarted)
	if err := parent.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-sendErr; !errors.Is(err, client.ErrCancelTool) {
		t.Fatalf("child.Send = %v, want the handler's cancellation", err)
	}
	returned := time.Now()
	f := waitFor(t, child, api.KindTurnFailed)
	var fail api.Failure
	json.Unmarshal(f.Data, &fail)
	if fail.Code != api.FailureCancelled {
		t.Fatalf("child turn failed with %+v, want cancelled", fail)
	}
	time.Sleep(time.Until(returned.Add(800 * time.Millisecond)))
	if n := len(ofKind(events(t, child), api.KindToolCallStarted)); n != 0 || childRuns.Load() != 0 {
		t.Fatalf("child tools ran after Send returned: %d started, %d runs", n, childRuns.Load())
	}
}

// TestCloseCancelsHandlers closes a client while its handler runs and
// ignores nothing: the handler sees ErrClosed-caused cancellation, Close
// does not wait for it, and Brain records the call as unknown.
func TestCloseCancelsHandlers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	observer := c.WithToken("tok")
	defer observer.Close()
	h, _ := c.Host(ctx)
	entered := make(chan struct{})
	stuck := make(chan struct{})
	defer close(stuck)
	h.Handle("stubborn", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		close(entered)
		<-stuck // ignores its ctx
		return client.OK(nil), nil
	})
	h.Connected(ctx)
	s := hostSession(t, c, h, "stubborn")
	if _, err := s.Submit(ctx, api.UserInput{Message: toolScript("stubborn")}); err != nil {
		t.Fatal(err)
	}
	<-entered
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close waited for a handler that ignores its ctx")
	}
	if err := h.Connected(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("host after Close: %v", err)
	}
	o := outcomeOf(t, waitFor(t, observer.Sessions.Open(s.ID), api.KindToolCallEnded))
	if o.Status != api.OutcomeUnknown {
		t.Fatalf("outcome after the host closed = %+v, want unknown", o)
	}
	// The session itself is untouched.
	if sum, err := observer.Sessions.Open(s.ID).Refresh(ctx); err != nil || sum.Status == api.StatusEnded {
		t.Fatalf("session after Close = %+v, %v", sum, err)
	}
}

// TestHostServicesAndLimits: a handler reaches granted services by name
// (and is refused the others), a host beyond its outstanding-command
// bound fails the extra call at once, a host that returned and then went
// away leaves the call unknown, and the host outlives the sessions that
// used it.
func TestHostServicesAndLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{Hosts: brain.Hosts{MaxCommands: 1}})
	observer := c.WithToken("tok")
	defer observer.Close()
	h, _ := c.Host(ctx)
	var granted, refused error
	h.Handle("probe", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		_, granted = call.Call(ctx, "emit", json.RawMessage(`{"event_type":"probed","data":{"ok":true}}`))
		_, refused = call.Call(ctx, "kv_put", json.RawMessage(`{"key":"k","value":1}`))
		return client.OK("probed"), nil
	})
	release := make(chan struct{})
	h.Handle("hold", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return client.OK("held"), nil
	})
	returned := make(chan struct{})
	h.Handle("background", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		if _, err := call.Returned(ctx, nil); err != nil {
			return api.Outcome{}, err
		}
		close(returned)
		<-ctx.Done()
		return client.OK("never posted"), nil
	})
	h.Connected(ctx)

	s := hostSession(t, c, h, "probe")
	if _, err := s.Send(context.Background(), api.UserInput{Message: toolScript("probe")}); err != nil {
		t.Fatal(err)
	}
	var ae *api.ApiError
	if granted != nil || !errors.As(refused, &ae) || ae.Code != api.CodeNotGranted {
		t.Fatalf("emit = %v, kv_put = %v (want not_granted)", granted, refused)
	}
	if evs := ofKind(events(t, s), "probed"); len(evs) != 1 || evs[0].Origin == nil || evs[0].Origin.Kind != api.OriginTool {
		t.Fatalf("probed events: %+v", evs)
	}
	if _, err := s.End(ctx); err != nil {
		t.Fatal(err)
	}

	// One outstanding command at most: the second call of the turn fails.
	s2 := hostSession(t, c, h, "hold")
	go func() {
		waitFor(t, s2, api.KindToolCallEnded)
		close(release)
	}()
	if _, err := s2.Send(context.Background(), api.UserInput{Message: toolScript("hold", "hold")}); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, ev := range ofKind(events(t, s2), api.KindToolCallEnded) {
		o := outcomeOf(t, ev)
		if o.Error != nil {
			codes = append(codes, o.Error.Code)
		} else {
			codes = append(codes, o.Status)
		}
	}
	if strings.Join(codes, ",") != "host_overloaded,ok" {
		t.Fatalf("outcomes %v, want host_overloaded then ok", codes)
	}

	// Returned, then the host goes away: the call is unknown.
	s3 := hostSession(t, c, h, "background")
	if _, err := s3.Send(context.Background(), api.UserInput{Message: toolScript("background")}); err != nil {
		t.Fatal(err)
	}
	<-returned
	c.Close()
	o := outcomeOf(t, waitFor(t, observer.Sessions.Open(s3.ID), api.KindToolCallEnded))
	if o.Status != api.OutcomeUnknown {
		t.Fatalf("returned call after the host left = %+v, want unknown", o)
	}
}

// TestEnvironmentControl drives every environment control operation
// through the typed client on a manual host template: create an instance,
// update it before its setup, set it up, call a method (refused by the
// host, typed), delete it, and find the old reference refused.
func TestEnvironmentControl(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	h, _ := c.Host(ctx)
	tmpl := h.Environment("pool")
	tmpl.Lifecycle = api.LifecycleManual
	tmpl.Template = &api.EnvironmentTemplate{MaxInstances: 2, ConfigurationSchema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer"}}}`)}
	req := scripted
	req.Environments = []api.Environment{tmpl}
	s, err := c.Sessions.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := s.CreateEnvironment(ctx, "pool", "one", json.RawMessage(`{"size":1}`))
	if err != nil || inst.Reference.Name != "one" || inst.Template != "pool" || inst.State != "declared" {
		t.Fatalf("CreateEnvironment = %+v, %v", inst, err)
	}
	var ae *api.ApiError
	if _, err := s.UpdateEnvironment(ctx, inst.Reference, json.RawMessage(`{"size":"big"}`)); !errors.As(err, &ae) || ae.Code != api.CodeInvalidRequest {
		t.Fatalf("update against the template schema = %v", err)
	}
	up, err := s.UpdateEnvironment(ctx, inst.Reference, json.RawMessage(`{"size":2}`))
	if err != nil || string(up.Configuration) != `{"size":2}` {
		t.Fatalf("UpdateEnvironment = %+v, %v", up, err)
	}
	ready, err := s.SetupEnvironment(ctx, inst.Reference)
	if err != nil || ready.State != "ready" {
		t.Fatalf("SetupEnvironment = %+v, %v", ready, err)
	}
	if _, err := s.UpdateEnvironment(ctx, inst.Reference, json.RawMessage(`{"size":3}`)); !errors.As(err, &ae) || ae.Code != api.CodeConflict {
		t.Fatalf("update after setup = %v, want conflict", err)
	}
	if _, err := s.CallEnvironment(ctx, inst.Reference, "inspect", nil); !errors.As(err, &ae) {
		t.Fatalf("CallEnvironment = %v, want a typed refusal", err)
	}
	list, err := s.ListEnvironments(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListEnvironments = %+v, %v", list, err)
	}
	if _, err := s.DeleteEnvironment(ctx, inst.Reference); err != nil {
		t.Fatal(err)
	}
	again, err := s.CreateEnvironment(ctx, "pool", "one", json.RawMessage(`{}`))
	if err != nil || again.Reference.Sequence == inst.Reference.Sequence {
		t.Fatalf("recreated instance = %+v, %v", again, err)
	}
	if _, err := s.GetEnvironment(ctx, inst.Reference); !errors.As(err, &ae) {
		t.Fatalf("the old incarnation's reference = %v, want refused", err)
	}
}

// TestHostCallsOfTwoSessions runs calls with the same sequence in two
// sessions on one host: cancelling one leaves the other running.
func TestHostCallsOfTwoSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	h, _ := c.Host(ctx)
	type stop struct {
		session string
		seq     uint64
		cause   error
	}
	stops := make(chan stop, 2)
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	h.Handle("slow", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		entered <- struct{}{}
		select {
		case <-ctx.Done():
			stops <- stop{call.SessionID, call.Sequence, context.Cause(ctx)}
		case <-release:
			stops <- stop{call.SessionID, call.Sequence, nil}
		}
		return client.OK("done"), nil
	})
	h.Connected(ctx)
	a, b := hostSession(t, c, h, "slow"), hostSession(t, c, h, "slow")
	for _, s := range []*client.Session{a, b} {
		if _, err := s.Submit(ctx, api.UserInput{Message: toolScript("slow")}); err != nil {
			t.Fatal(err)
		}
	}
	<-entered
	<-entered
	sa, sb := waitFor(t, a, api.KindToolCallStarted), waitFor(t, b, api.KindToolCallStarted)
	if sa.Sequence != sb.Sequence {
		t.Fatalf("the calls have sequences %d and %d; the test needs equal ones", sa.Sequence, sb.Sequence)
	}
	if err := a.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	first := <-stops
	if first.session != a.ID || !errors.Is(first.cause, client.ErrCancelTool) {
		t.Fatalf("first stop %+v, want session %s cancelled", first, a.ID)
	}
	close(release)
	second := <-stops
	if second.session != b.ID || second.cause != nil {
		t.Fatalf("second stop %+v, want session %s released", second, b.ID)
	}
	if o := outcomeOf(t, waitFor(t, b, api.KindToolCallEnded)); o.Status != api.OutcomeOK {
		t.Fatalf("the other session's call = %+v", o)
	}
}
