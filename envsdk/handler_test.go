package envsdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// testProvider is a provider whose Execute is chosen by the implementation
// descriptor, and which counts every call that reaches it.
type testProvider struct {
	envsdk.Base
	calls   atomic.Int64
	started chan uint64 // sequences of executes that started
	stopped chan error  // context causes seen by "wait"
	later   chan error  // results of Finish calls made after return
}

func newTestProvider() *testProvider {
	return &testProvider{started: make(chan uint64, 16), stopped: make(chan error, 16), later: make(chan error, 16)}
}

type setupConfig struct {
	Label string `json:"label" validate:"omitempty,max=8"`
	Size  int    `json:"size" validate:"min=0,max=10"`
}

func (p *testProvider) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	p.calls.Add(1)
	var cfg setupConfig
	if err := c.DecodeConfiguration(&cfg); err != nil {
		return envsdk.SetupResult{}, err
	}
	return envsdk.SetupResult{OnTurnEnd: "release"}, nil
}

func (p *testProvider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	p.calls.Add(1)
	var impl string
	_ = json.Unmarshal(x.Implementation, &impl)
	switch impl {
	case "echo":
		return envsdk.Output(map[string]json.RawMessage{"echo": x.Input})
	case "panic":
		panic("boom")
	case "wait":
		p.started <- c.Sequence
		<-c.Context().Done()
		p.stopped <- context.Cause(c.Context())
		return envapi.Receipt{}, c.Context().Err()
	case "emit":
		_, err := x.Invocation.Emit(c.Context(), "progress", map[string]int{"n": 1})
		return envsdk.Output(map[string]string{"emit_error": fmt.Sprint(err), "not_granted": fmt.Sprint(errors.Is(err, envsdk.ErrNotGranted))})
	case "later":
		go func() {
			ctx, cancel := context.WithDeadline(context.Background(), x.Deadline)
			defer cancel()
			out := envapi.OK(json.RawMessage(`"done"`))
			_, err := x.Invocation.Finish(ctx, &out)
			p.later <- err
		}()
		return envapi.Returned(nil), nil
	case "cleanupfails":
		<-c.Context().Done()
		return envapi.Receipt{}, envsdk.Fail("cleanup_failed", "pid 7 survived").WithDetails(map[string][]int{"pids": {7}})
	case "fail":
		return envapi.Receipt{}, envsdk.Fail("busy", "try later").WithRetryable(true).WithDetails(map[string]int{"running": 2})
	case "unknown":
		return envapi.Receipt{}, fmt.Errorf("lost the sandbox mid-call: %w", envsdk.ErrUnknown)
	}
	return envapi.Receipt{}, envsdk.Fail(envapi.CodeUnsupported, "unknown implementation")
}

func (p *testProvider) Methods() map[string]envsdk.Method {
	return map[string]envsdk.Method{
		"inspect": {Description: "inspect", InputSchema: json.RawMessage(`{"type":"object"}`),
			Run: func(c *envsdk.Ctx, in json.RawMessage) (any, error) { return map[string]any{"in": in}, nil }},
		"release": {Description: "called after every turn", Run: func(*envsdk.Ctx, json.RawMessage) (any, error) { return nil, nil }},
	}
}

const token = "provider-token"

func serve(t *testing.T, p envsdk.Provider, opts *envsdk.Options) *httptest.Server {
	t.Helper()
	if opts == nil {
		opts = &envsdk.Options{Token: token}
	}
	srv := httptest.NewServer(envsdk.NewHandler(p, opts))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, tok string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func command(seq uint64, req envapi.Request) []byte {
	data, err := json.Marshal(envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID: "ses_1", Environment: "env", Sequence: seq, Request: req,
	}})
	if err != nil {
		panic(err)
	}
	return data
}

func execute(seq uint64, impl string, deadlineMs *int64, g *envapi.Grant) []byte {
	implJSON, _ := json.Marshal(impl)
	return command(seq, envapi.Execute(implJSON, json.RawMessage(`{"x":1}`), deadlineMs, g))
}

// send posts a command and decodes the response strictly.
func send(t *testing.T, srv *httptest.Server, body []byte) envapi.Response {
	t.Helper()
	status, data := post(t, srv.URL+"/v1/operations", token, body)
	if status != http.StatusOK {
		t.Fatalf("POST /v1/operations = %d %s, want 200", status, data)
	}
	resp, err := envapi.DecodeResponse(data)
	if err != nil {
		t.Fatalf("decode response %s: %v", data, err)
	}
	return resp
}

func TestTransportErrors(t *testing.T) {
	p := newTestProvider()
	srv := serve(t, p, nil)
	valid := command(1, envapi.Detach())
	tests := []struct {
		name   string
		path   string
		token  string
		body   []byte
		status int
		field  string
	}{
		{"missing token", "/v1/operations", "", valid, 401, ""},
		{"wrong token", "/v1/operations", "nope", valid, 401, ""},
		{"wrong token on unknown route", "/elsewhere", "nope", valid, 401, ""},
		{"unknown route", "/v1/other", token, valid, 404, ""},
		{"too large", "/v1/operations", token, bytes.Repeat([]byte(" "), envsdk.DefaultMaxBodyBytes+1), 413, ""},
		{"malformed", "/v1/operations", token, []byte(`{"contract":`), 400, ""},
		{"bad identifier", "/v1/operations", token, []byte(`{"contract":"environment/v1","operation":{"session_id":"../x","environment":"e","sequence":1,"request":{"type":"detach"}}}`), 400, "operation.session_id"},
		{"zero sequence", "/v1/operations", token, []byte(`{"contract":"environment/v1","operation":{"session_id":"s","environment":"e","sequence":0,"request":{"type":"detach"}}}`), 400, "operation.sequence"},
		{"unknown field", "/v1/operations", token, []byte(`{"contract":"environment/v1","operation":{"session_id":"s","environment":"e","sequence":1,"request":{"type":"detach"},"priority":9}}`), 400, "operation.priority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, data := post(t, srv.URL+tt.path, tt.token, tt.body)
			if status != tt.status {
				t.Fatalf("status = %d (%s), want %d", status, data, tt.status)
			}
			if tt.field != "" {
				var body struct{ Error, Field string }
				if err := json.Unmarshal(data, &body); err != nil || body.Field != tt.field || !strings.Contains(body.Error, tt.field) {
					t.Errorf("body = %s, want the field %q named", data, tt.field)
				}
			}
		})
	}
	if n := p.calls.Load(); n != 0 {
		t.Errorf("provider ran %d times for rejected requests, want 0", n)
	}
}

func TestUnsupported(t *testing.T) {
	srv := serve(t, newTestProvider(), nil)
	resp := send(t, srv, []byte(`{"contract":"environment/v1","operation":{"session_id":"s","environment":"e","sequence":7,"request":{"type":"invoke"}}}`))
	if resp.Sequence != 7 || resp.Receipt.Type != envapi.ReceiptFailure || resp.Receipt.Code != envapi.CodeUnsupported {
		t.Errorf("unknown request type answered %+v, want unsupported failure for sequence 7", resp)
	}
	resp = send(t, srv, command(8, envapi.Call("explode", json.RawMessage(`{}`))))
	if resp.Receipt.Code != envapi.CodeUnsupported {
		t.Errorf("undeclared method answered %+v, want unsupported", resp.Receipt)
	}
	resp = send(t, srv, execute(9, "no-such-tool", nil, nil))
	if resp.Receipt.Code != envapi.CodeUnsupported {
		t.Errorf("unknown descriptor answered %+v, want unsupported", resp.Receipt)
	}
}

func TestSetupAndMethods(t *testing.T) {
	srv := serve(t, newTestProvider(), nil)
	// Invalid setups first: a failed setup leaves the binding not set up,
	// so the valid one after them is its first.
	resp := send(t, srv, command(1, envapi.Setup(json.RawMessage(`{"label":"much too long"}`))))
	if resp.Receipt.Code != envapi.CodeInvalidConfiguration || !strings.Contains(resp.Receipt.Message, "configuration.label") {
		t.Errorf("invalid setup answered %+v, want invalid_configuration naming configuration.label", resp.Receipt)
	}
	resp = send(t, srv, command(2, envapi.Setup(json.RawMessage(`{"colour":"red"}`))))
	if resp.Receipt.Code != envapi.CodeInvalidConfiguration || !strings.Contains(resp.Receipt.Message, "configuration.colour") {
		t.Errorf("unknown setup field answered %+v, want invalid_configuration naming configuration.colour", resp.Receipt)
	}
	resp = send(t, srv, command(3, envapi.Setup(json.RawMessage(`{"label":"ok"}`))))
	if resp.Receipt.Type != envapi.ReceiptAccepted || resp.Receipt.OnTurnEnd != "release" {
		t.Errorf("setup answered %+v, want accepted with on_turn_end release", resp.Receipt)
	}
	resp = send(t, srv, command(4, envapi.Call("inspect", json.RawMessage(`{"deep":true}`))))
	if resp.Receipt.Type != envapi.ReceiptResult || string(resp.Receipt.Output) != `{"in":{"deep":true}}` {
		t.Errorf("call inspect answered %+v", resp.Receipt)
	}
}

func TestPanicKeepsServing(t *testing.T) {
	srv := serve(t, newTestProvider(), nil)
	resp := send(t, srv, execute(1, "panic", nil, nil))
	if resp.Receipt.Code != envapi.CodeEnvironmentFailed || !strings.Contains(resp.Receipt.Message, "boom") {
		t.Fatalf("panicking provider answered %+v, want environment_failed", resp.Receipt)
	}
	resp = send(t, srv, execute(2, "echo", nil, nil))
	if resp.Receipt.Type != envapi.ReceiptResult {
		t.Errorf("after a panic, echo answered %+v, want a result", resp.Receipt)
	}
}

func TestFailureFieldsAndUnknown(t *testing.T) {
	srv := serve(t, newTestProvider(), nil)
	r := send(t, srv, execute(1, "fail", nil, nil)).Receipt
	if r.Code != "busy" || r.Message != "try later" || !r.Retryable || string(r.Details) != `{"running":2}` {
		t.Errorf("typed failure answered %+v", r)
	}
	r = send(t, srv, execute(2, "unknown", nil, nil)).Receipt
	if r.Type != envapi.ReceiptUnknown {
		t.Errorf("ErrUnknown answered %+v, want unknown", r)
	}
}

func TestDeadlineTimesOut(t *testing.T) {
	p := newTestProvider()
	srv := serve(t, p, nil)
	ms := int64(50)
	start := time.Now()
	r := send(t, srv, execute(1, "wait", &ms, nil)).Receipt
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
		t.Fatalf("execute past its deadline answered %+v, want timeout", r)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("answered after %v, before the deadline", el)
	}
	if cause := <-p.stopped; !strings.Contains(cause.Error(), "deadline") {
		t.Errorf("provider context cause = %v, want the deadline", cause)
	}
}

// A provider whose cleanup fails after the deadline answers the first
// stop cause, timeout, and its typed failure (code and structured
// details) is the cleanup evidence in the failure's details.
func TestDeadlineKeepsTypedCleanupEvidence(t *testing.T) {
	srv := serve(t, newTestProvider(), nil)
	ms := int64(20)
	r := send(t, srv, execute(1, "cleanupfails", &ms, nil)).Receipt
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
		t.Fatalf("answered %+v, want timeout", r)
	}
	var ev struct {
		Error   string          `json:"error"`
		Code    string          `json:"code"`
		Details json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal(r.Details, &ev); err != nil || ev.Code != "cleanup_failed" || ev.Error != "pid 7 survived" || string(ev.Details) != `{"pids":[7]}` {
		t.Fatalf("cleanup evidence = %s (%v), want the provider's code, message and details", r.Details, err)
	}
}

func TestCancelRunningSequence(t *testing.T) {
	p := newTestProvider()
	srv := serve(t, p, nil)
	result := make(chan envapi.Receipt, 1)
	go func() { result <- send(t, srv, execute(5, "wait", nil, nil)).Receipt }()
	if seq := <-p.started; seq != 5 {
		t.Fatalf("started sequence %d, want 5", seq)
	}
	if r := send(t, srv, command(6, envapi.Cancel(5))).Receipt; r.Type != envapi.ReceiptAccepted {
		t.Errorf("cancel answered %+v, want accepted", r)
	}
	if r := <-result; r.Code != envapi.CodeCancelled {
		t.Errorf("cancelled execute answered %+v, want cancelled", r)
	}
}

func TestStuckProviderAnsweredAfterGrace(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	p := &stuckProvider{release: release}
	srv := serve(t, p, &envsdk.Options{Token: token, StopGrace: 20 * time.Millisecond})
	ms := int64(10)
	r := send(t, srv, execute(1, "x", &ms, nil)).Receipt
	if r.Code != envapi.CodeTimeout || !strings.Contains(string(r.Details), "did not stop") {
		t.Errorf("stuck provider answered %+v, want timeout with cleanup evidence", r)
	}
}

type stuckProvider struct {
	envsdk.Base
	release chan struct{}
}

func (p *stuckProvider) Execute(*envsdk.Ctx, *envsdk.Execution) (envapi.Receipt, error) {
	<-p.release // ignores its context
	return envapi.Result(nil), nil
}

func TestResultIsFinishedOnce(t *testing.T) {
	b := newFakeBrain(t)
	srv := serve(t, newTestProvider(), nil)
	r := send(t, srv, execute(1, "echo", nil, b.grant(envapi.ToolMethods()...))).Receipt
	if r.Type != envapi.ReceiptResult {
		t.Fatalf("echo answered %+v", r)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Fatalf("finish sent %d times, want 1", n)
	}
	b.mu.Lock()
	in := string(b.calls[0].Input)
	b.mu.Unlock()
	if in != `{"status":"ok","value":{"echo":{"x":1}}}` {
		t.Errorf("finish input = %s", in)
	}
}

func TestLostFinishAckIsUnknownAndNotRepeated(t *testing.T) {
	b := newFakeBrain(t)
	b.loseAck[envapi.MethodFinish] = true
	srv := serve(t, newTestProvider(), nil)
	r := send(t, srv, execute(1, "echo", nil, b.grant(envapi.ToolMethods()...))).Receipt
	if r.Type != envapi.ReceiptUnknown {
		t.Fatalf("lost finish acknowledgement answered %+v, want unknown", r)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Errorf("finish sent %d times, want exactly 1", n)
	}
}

func TestFinishAfterReturn(t *testing.T) {
	b := newFakeBrain(t)
	p := newTestProvider()
	srv := serve(t, p, nil)
	ms := int64(10_000)
	r := send(t, srv, execute(1, "later", &ms, b.grant(envapi.ToolMethods()...))).Receipt
	if r.Type != envapi.ReceiptReturned {
		t.Fatalf("later answered %+v, want returned", r)
	}
	if err := <-p.later; err != nil {
		t.Fatalf("Finish after return: %v", err)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Errorf("finish sent %d times, want 1", n)
	}
}

func TestLaterFinishWithLostAck(t *testing.T) {
	b := newFakeBrain(t)
	b.loseAck[envapi.MethodFinish] = true
	p := newTestProvider()
	srv := serve(t, p, nil)
	ms := int64(10_000)
	send(t, srv, execute(1, "later", &ms, b.grant(envapi.ToolMethods()...)))
	if err := <-p.later; !errors.Is(err, envsdk.ErrAckLost) {
		t.Errorf("Finish with a lost acknowledgement = %v, want ErrAckLost", err)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Errorf("finish sent %d times, want 1", n)
	}
}

func TestUngrantedMethodStaysLocal(t *testing.T) {
	b := newFakeBrain(t)
	srv := serve(t, newTestProvider(), nil)
	r := send(t, srv, execute(1, "emit", nil, b.grant(envapi.MethodFinish))).Receipt
	if r.Type != envapi.ReceiptResult || !strings.Contains(string(r.Output), `"not_granted":"true"`) {
		t.Fatalf("emit without grant answered %+v, want ErrNotGranted", r)
	}
	if n := b.count(envapi.MethodEmit); n != 0 {
		t.Errorf("ungranted emit reached Brain %d times", n)
	}
}

func TestRepeatedSequenceNotRerun(t *testing.T) {
	p := newTestProvider()
	srv := serve(t, p, nil)
	send(t, srv, execute(3, "echo", nil, nil))
	r := send(t, srv, execute(3, "echo", nil, nil)).Receipt
	if r.Type != envapi.ReceiptUnknown {
		t.Errorf("repeated execute answered %+v, want unknown", r)
	}
	if n := p.calls.Load(); n != 1 {
		t.Errorf("provider executed %d times, want 1", n)
	}
}

func TestInvocationKVAndNilSafety(t *testing.T) {
	var nilInv *envsdk.Invocation
	if _, err := nilInv.Emit(context.Background(), "x", nil); !errors.Is(err, envsdk.ErrNotGranted) {
		t.Errorf("nil invocation Emit = %v, want ErrNotGranted", err)
	}
}

// Without a token the handler serves only requests naming a loopback
// host: a web page that reaches it by DNS rebinding names its own host and
// is refused before anything runs.
func TestNoTokenServesLoopbackHostsOnly(t *testing.T) {
	p := newTestProvider()
	srv := serve(t, p, &envsdk.Options{})
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	seq := uint64(0)
	for host, want := range map[string]int{"127.0.0.1" + port: 200, "localhost" + port: 200, "rebound.example" + port: 401} {
		seq++
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/operations", bytes.NewReader(execute(seq, "echo", nil, nil)))
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	if n := p.calls.Load(); n != 2 {
		t.Fatalf("%d executes ran, want the 2 from loopback hosts", n)
	}
}
