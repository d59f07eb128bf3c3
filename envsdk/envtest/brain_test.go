package envtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// post sends body to url with token and returns the status and answer.
func post(t *testing.T, url, token string, body any) (int, string, error) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(out), nil
}

func call(t *testing.T, g envapi.Grant, method string, input any) (int, string) {
	t.Helper()
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	status, body, err := post(t, g.URL, g.Token, envapi.ExecutionCall{Method: method, Input: in})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return status, body
}

func want(t *testing.T, what string, status int, body string, wantStatus int, wantBody string) {
	t.Helper()
	if status != wantStatus || !strings.Contains(body, wantBody) {
		t.Errorf("%s: got %d %s, want %d containing %s", what, status, body, wantStatus, wantBody)
	}
}

func TestToolGrantServices(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("s1", 7)
	if !strings.HasSuffix(g.URL, "/v1/sessions/s1/executions/7/call") || len(g.Token) < 32 {
		t.Fatalf("grant %+v", g)
	}
	status, body := call(t, g, "emit", map[string]any{"event_type": "progress", "data": 1})
	want(t, "emit", status, body, 200, "100")
	status, body = call(t, g, "emit", map[string]any{"event_type": "bad type", "data": 1})
	want(t, "emit with a bad event type", status, body, 422, `"invalid_request"`)
	status, body = call(t, g, "telemetry", map[string]any{"x": 1})
	want(t, "telemetry", status, body, 200, "null")
	status, body = call(t, g, "model", map[string]any{"messages": []any{}})
	want(t, "model", status, body, 200, `"stop_reason":"end_turn"`)
	status, body = call(t, g, "environments", map[string]any{"operation": "list"})
	want(t, "environments", status, body, 200, `{"environments":[]}`)
	status, body = call(t, g, "result", envapi.OK(json.RawMessage(`1`)))
	want(t, "result", status, body, 200, "101")
	status, body = call(t, g, "result", map[string]any{"status": "fine"})
	want(t, "result with a bad outcome", status, body, 422, `"invalid_request"`)
	status, body = call(t, g, "kv_read", "k")
	want(t, "kv_read (not granted to a Tool)", status, body, 403, `"not_granted"`)
	status, body = call(t, g, "returned", nil)
	want(t, "returned null", status, body, 200, "102")
	status, body = call(t, g, "finish", envapi.OK(json.RawMessage(`"done"`)))
	want(t, "finish", status, body, 200, "103")
	if !b.Revoked(g.Token) {
		t.Error("finish did not close the grant")
	}
	status, body = call(t, g, "emit", map[string]any{"event_type": "late", "data": 1})
	want(t, "emit after finish", status, body, 401, `"unauthorized"`)

	calls := b.CallsFor("s1", 7)
	var methods []string
	for _, c := range calls {
		methods = append(methods, c.Method)
		if c.Token != g.Token {
			t.Errorf("call %v recorded token %q", c, c.Token)
		}
	}
	if got := strings.Join(methods, ","); got != "emit,emit,telemetry,model,environments,result,result,kv_read,returned,finish,emit" {
		t.Errorf("recorded methods %s", got)
	}
	if c := calls[len(calls)-2]; c.Committed != 103 || c.Status != 200 || !c.Accepted() {
		t.Errorf("finish record %+v", c)
	}
}

func TestAuthentication(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("s1", 1)
	other := b.ToolGrant("s1", 2)
	in := envapi.ExecutionCall{Method: "emit", Input: json.RawMessage(`{"event_type":"x","data":null}`)}
	for _, tc := range []struct {
		name, url, token string
	}{
		{"missing", g.URL, ""},
		{"wrong", g.URL, "nope"},
		{"other execution", g.URL, other.Token},
	} {
		status, body, err := post(t, tc.url, tc.token, in)
		if err != nil {
			t.Fatal(err)
		}
		want(t, tc.name, status, body, 401, `"code":"unauthorized"`)
	}
	b.Revoke(g.Token)
	status, body, _ := post(t, g.URL, g.Token, in)
	want(t, "revoked", status, body, 401, `"unauthorized"`)
	b.Expire(other.Token, time.Now())
	status, body, _ = post(t, other.URL, other.Token, in)
	want(t, "expired", status, body, 401, `"unauthorized"`)
	if n := b.Count(func(c envtest.Call) bool { return c.Status == 401 }); n != 5 {
		t.Errorf("recorded %d rejected calls, want 5", n)
	}
}

func TestAgentloopKV(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.AgentloopGrant("s1", 3)
	status, body := call(t, g, "kv_read", "k")
	want(t, "kv_read absent", status, body, 200, "{}")
	status, body = call(t, g, "kv_put", map[string]any{"key": "k", "value": nil})
	want(t, "kv_put", status, body, 200, "100")
	status, body = call(t, g, "kv_read", "k")
	want(t, "kv_read null", status, body, 200, `{"value":null}`)
	status, body = call(t, g, "kv_put", map[string]any{"key": "k", "value": map[string]int{"a": 1}})
	want(t, "kv_put again", status, body, 200, "101")
	if v, ok := b.KV("s1", "k"); !ok || string(v) != `{"a":1}` {
		t.Errorf("KV = %s %v", v, ok)
	}
	status, body = call(t, g, "kv_delete", "k")
	want(t, "kv_delete", status, body, 200, "102")
	status, body = call(t, g, "kv_read", "k")
	if status != 200 || body != "{}" {
		t.Errorf("kv_read after delete: %d %s", status, body)
	}
	status, body = call(t, g, "events", 5)
	want(t, "events", status, body, 200, `{"events":[],"next_cursor":5}`)
	status, body = call(t, g, "set_transcript", []any{})
	want(t, "set_transcript", status, body, 200, "103")
	status, body = call(t, g, "dispatch", []envapi.ToolInvocation{{CallID: "c1", Name: "t", Environment: "e", Input: json.RawMessage(`{}`)}})
	want(t, "dispatch", status, body, 200, `"call_id":"c1","sequence":104`)
	b.Handle("dispatch", func(c envtest.Call) (int, any) { return 200, []string{"custom"} })
	status, body = call(t, g, "dispatch", []any{})
	want(t, "dispatch handled", status, body, 200, `["custom"]`)
	status, body = call(t, g, "finish", nil)
	want(t, "finish (not granted to an Agentloop)", status, body, 403, `"not_granted"`)
}

func TestReporterAndContext(t *testing.T) {
	b := envtest.NewBrain(t)
	r := b.ReporterGrant("s1", "ws", 1)
	if !strings.HasSuffix(r.URL, "/v1/sessions/s1/environments/ws/1/events") {
		t.Fatalf("reporter url %s", r.URL)
	}
	obs := map[string]any{"type": "result", "output": map[string]any{"observation": map[string]any{"scope": "environment", "availability": "available", "message": "up"}}}
	status, body, err := post(t, r.URL, r.Token, obs)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "observation", status, body, 200, `{"sequence":100}`)
	status, body, _ = post(t, r.URL, r.Token, map[string]any{"type": "result", "output": map[string]any{"observation": map[string]any{"scope": "resource"}}})
	want(t, "observation without resource", status, body, 422, `"invalid_request"`)
	other := b.ReporterGrant("s1", "ws", 2)
	status, body, _ = post(t, r.URL, other.Token, obs)
	want(t, "reporter of another binding", status, body, 401, `"unauthorized"`)

	c := b.ContextGrant("s1", "ws", 4)
	status, body = call(t, c, "environments", map[string]any{"operation": "list"})
	want(t, "context environments", status, body, 200, `"environments"`)
	status, body = call(t, c, "finish", nil)
	want(t, "context finish", status, body, 403, `"not_granted"`)
	got := b.Filter(func(c envtest.Call) bool { return c.Kind == envtest.KindReporter })
	if len(got) != 3 || got[0].Method != envtest.MethodReporter || got[0].Environment != "ws" || got[0].Sequence != 1 {
		t.Errorf("reporter records %v", got)
	}
}

func TestFaults(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("s1", 1)
	in := envapi.ExecutionCall{Method: "finish", Input: json.RawMessage(`null`)}

	b.Inject("finish", envtest.Fault{Kind: envtest.ServerError, Times: 1})
	status, body, err := post(t, g.URL, g.Token, in)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "server error", status, body, 503, `"internal"`)
	if b.LastSequence() != 99 {
		t.Error("a 5xx committed the call")
	}

	b.Inject("finish", envtest.Fault{Kind: envtest.LoseAck, Token: g.Token})
	if _, _, err := post(t, g.URL, g.Token, in); err == nil {
		t.Fatal("lost acknowledgement answered")
	}
	calls := b.CallsFor("s1", 1)
	last := calls[len(calls)-1]
	if last.Status != 0 || last.Committed != 100 || !last.Accepted() || last.Fault == nil || last.Fault.Kind != envtest.LoseAck {
		t.Errorf("lost acknowledgement recorded as %+v", last)
	}
	if !b.Revoked(g.Token) {
		t.Error("a processed finish whose acknowledgement was lost left the grant open")
	}

	g2 := b.ToolGrant("s1", 2)
	b.Inject("emit", envtest.Fault{Kind: envtest.SlowReply, Delay: 50 * time.Millisecond, Times: 1})
	start := time.Now()
	status, body = call(t, g2, "emit", map[string]any{"event_type": "x", "data": 1})
	if status != 200 || time.Since(start) < 50*time.Millisecond {
		t.Errorf("slow reply: %d %s after %v", status, body, time.Since(start))
	}
	b.Inject("emit", envtest.Fault{Kind: envtest.RevokedToken, Times: 1})
	status, body = call(t, g2, "emit", map[string]any{"event_type": "x", "data": 1})
	want(t, "revoked by fault", status, body, 401, `"unauthorized"`)
	status, body = call(t, g2, "telemetry", nil)
	want(t, "after the revoking fault", status, body, 401, `"unauthorized"`)
}

func TestWaitFor(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("s1", 1)
	go func() {
		in, _ := json.Marshal(envapi.ExecutionCall{Method: "emit", Input: json.RawMessage(`{"event_type":"x","data":1}`)})
		req, _ := http.NewRequest(http.MethodPost, g.URL, bytes.NewReader(in))
		req.Header.Set("Authorization", "Bearer "+g.Token)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := b.WaitFor(ctx, envtest.Execution("s1", 1, "emit"))
	if err != nil || c.Status != 200 {
		t.Fatalf("WaitFor: %+v %v", c, err)
	}
	short, cancel2 := context.WithCancel(t.Context())
	cancel2()
	if _, err := b.WaitFor(short, envtest.Method("finish")); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor on a cancelled context: %v", err)
	}
}

// TestLoseAckHeld: a lost acknowledgement with a Delay is recorded when the
// call is processed and keeps the caller waiting that long before its
// connection closes.
func TestLoseAckHeld(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("s1", 1)
	const hold = 150 * time.Millisecond
	b.Inject("finish", envtest.Fault{Kind: envtest.LoseAck, Token: g.Token, Delay: hold})
	in := envapi.ExecutionCall{Method: "finish", Input: json.RawMessage(`{"status":"ok","value":1}`)}
	start := time.Now()
	recorded := make(chan time.Duration, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := b.WaitFor(ctx, envtest.Execution("s1", 1, "finish")); err == nil {
			recorded <- time.Since(start)
		}
	}()
	if _, _, err := post(t, g.URL, g.Token, in); err == nil {
		t.Fatal("lost acknowledgement answered")
	}
	if d := time.Since(start); d < hold {
		t.Errorf("the connection closed after %v, want at least %v", d, hold)
	}
	select {
	case d := <-recorded:
		if d >= hold {
			t.Errorf("the call was seen %v after it was sent, want while it was held (%v)", d, hold)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call was not recorded")
	}
}
