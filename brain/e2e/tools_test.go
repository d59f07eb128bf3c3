package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// postGrant posts body to a grant URL with its bearer token.
func postGrant(t *testing.T, url, token string, body any) (int, []byte) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// outcome answers the outcome of the tool_call_ended closing tool seq.
func outcome(t *testing.T, evs []api.Event, seq uint64) (api.Outcome, bool) {
	t.Helper()
	for _, ev := range ofKind(evs, api.KindToolCallEnded) {
		if dataField[uint64](t, ev, "sequence") == seq {
			return dataField[api.Outcome](t, ev, "outcome"), dataField[bool](t, ev, "is_error")
		}
	}
	t.Fatalf("tool %d has no tool_call_ended: %s", seq, kindsLine(evs))
	return api.Outcome{}, false
}

func TestTools(t *testing.T) {
	b := newBrain(t, brain.Limits{})
	c := newClient(t, b.URL)

	t.Run("echo_and_emit_origin", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)},
			Tools: []api.Tool{tool("echo", "box", "echo"), tool("emitter", "box", "emit")}}).SessionID
		if status, body := c.send(id, toolCalls("echo", "emitter")); status != http.StatusOK {
			t.Fatalf("send: %d %s", status, body)
		}
		evs := c.events(id)
		starts := ofKind(evs, api.KindToolCallStarted)
		execs := f.received(envapi.RequestExecute)
		if len(starts) != 2 || len(execs) != 2 {
			t.Fatalf("%d started, %d executes: %s", len(starts), len(execs), kindsLine(evs))
		}
		for _, x := range execs {
			op := x.Cmd.Operation
			g := op.Request.Callback
			if g == nil || g.Token == "" || !strings.HasPrefix(g.URL, b.URL+"/v1/sessions/"+id+"/executions/") ||
				strings.Join(g.Methods, ",") != strings.Join(envapi.ToolMethods(), ",") {
				t.Errorf("callback grant %+v", g)
			}
			if op.Request.DeadlineMs == nil || *op.Request.DeadlineMs != 120000 {
				t.Errorf("deadline_ms %v", op.Request.DeadlineMs)
			}
			if op.Sequence != starts[0].Sequence && op.Sequence != starts[1].Sequence {
				t.Errorf("execute sequence %d is no tool_call_started", op.Sequence)
			}
		}
		o, isErr := outcome(t, evs, starts[0].Sequence)
		if isErr || o.Status != api.OutcomeOK || string(o.Value) != `{"n":0}` {
			t.Errorf("echo outcome %+v", o)
		}
		progress := ofKind(evs, "progress")
		if len(progress) != 1 || progress[0].Origin == nil || progress[0].Origin.Kind != api.OriginTool ||
			progress[0].Origin.Sequence != starts[1].Sequence {
			t.Fatalf("tool emit: %+v", progress)
		}
		// Tokens are revoked as the executions close.
		for _, x := range execs {
			g := x.Cmd.Operation.Request.Callback
			req, _ := http.NewRequest(http.MethodPost, g.URL, strings.NewReader(`{"method":"emit","input":{"type":"late","data":{}}}`))
			req.Header.Set("Authorization", "Bearer "+g.Token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("a call with the token of a finished execution answered %d, want 401", resp.StatusCode)
			}
		}
	})

	t.Run("explicit_unknown_is_not_unreachable", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("u", "box", "unknown")}}).SessionID
		c.send(id, toolCalls("u"))
		evs := c.events(id)
		o, _ := outcome(t, evs, ofKind(evs, api.KindToolCallStarted)[0].Sequence)
		if o.Status != api.OutcomeUnknown || len(ofKind(evs, api.KindEnvironmentUnreachable)) != 0 {
			t.Fatalf("outcome %+v, events %s", o, kindsLine(evs))
		}
	})

	t.Run("schemas", func(t *testing.T) {
		f := newFixture(t)
		strict := tool("strict", "box", "echo")
		strict.InputSchema = json.RawMessage(`{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}`)
		typed := tool("typed", "box", "bad_output")
		typed.OutputSchema = json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}}}`)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{strict, typed}}).SessionID
		c.send(id, toolCalls("strict", "typed"))
		evs := c.events(id)
		starts := ofKind(evs, api.KindToolCallStarted)
		in, _ := outcome(t, evs, starts[0].Sequence)
		out, _ := outcome(t, evs, starts[1].Sequence)
		if in.Error == nil || in.Error.Code != envapi.CodeInvalidInput {
			t.Errorf("invalid input outcome %+v", in)
		}
		if out.Error == nil || out.Error.Code != envapi.CodeInvalidOutput {
			t.Errorf("invalid output outcome %+v", out)
		}
		execs := f.received(envapi.RequestExecute)
		if len(execs) != 1 || execs[0].Cmd.Operation.Sequence != starts[1].Sequence {
			t.Errorf("the invalid input was executed: %d executes", len(execs))
		}
		// A schema Brain cannot read refuses the create.
		bad := tool("x", "box", "echo")
		bad.InputSchema = json.RawMessage(`{"type":"thing"}`)
		status, _ := c.do(http.MethodPost, "/v1/sessions", api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"},
			Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{bad}}, nil)
		if status != http.StatusUnprocessableEntity {
			t.Errorf("create with an invalid schema: %d", status)
		}
	})

}

func TestToolInterrupt(t *testing.T) {
	t.Run("interrupt_cancels", func(t *testing.T) {
		b := newBrain(t, brain.Limits{})
		c := newClient(t, b.URL)
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("slow", "box", "hang")}}).SessionID
		c.submit(id, toolCalls("slow"))
		x := f.waitFor(envapi.RequestExecute, 1)[0]
		c.must(http.StatusNoContent, http.MethodPost, "/v1/sessions/"+id+"/cancel", nil, nil)
		cancels := f.waitFor(envapi.RequestCancel, 1)
		if cancels[0].Cmd.Operation.Request.TargetSequence != x.Cmd.Operation.Sequence {
			t.Fatalf("cancel %+v", cancels[0].Cmd.Operation.Request)
		}
		c.waitEvent(id, ofType(api.KindTurnFailed))
		o, _ := outcome(t, c.events(id), x.Cmd.Operation.Sequence)
		if o.Status != api.OutcomeCancelled {
			t.Fatalf("outcome %+v", o)
		}
		g := x.Cmd.Operation.Request.Callback
		if status, _ := postGrant(t, g.URL, g.Token, envapi.ExecutionCall{Method: "emit", Input: json.RawMessage(`{"event_type":"x","data":{}}`)}); status != http.StatusUnauthorized {
			t.Errorf("callback after cancellation: %d", status)
		}
	})
}
