package brain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/otlptest"
)

const (
	// incoming is the trace context a caller sends with its request.
	incomingTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingParent = "00f067aa0ba902b7"
	incoming       = "00-" + incomingTrace + "-" + incomingParent + "-01"
	providerKey    = "sekrit-provider-key"
)

// tracedProvider is an envsdk provider whose Execute starts a span of its
// own with the global OpenTelemetry API and records the trace headers of
// every operation it receives.
type tracedProvider struct {
	envsdk.Base
	mu      sync.Mutex
	parents []string // traceparent of each operation
}

func (p *tracedProvider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	ctx, span := otel.Tracer("provider").Start(c.Context(), "provider.execute")
	defer span.End()
	span.SetAttributes(attribute.String("provider.input", string(x.Input)))
	// A callback under the provider's span continues the trace.
	if _, err := x.Invocation.Emit(ctx, "tool_progress", map[string]int{"n": 1}); err != nil {
		return envapi.Receipt{}, err
	}
	return envsdk.Output(json.RawMessage(x.Input))
}

func (p *tracedProvider) handler() http.Handler {
	h := envsdk.NewHandler(p, &envsdk.Options{Token: providerKey})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.parents = append(p.parents, r.Header.Get("traceparent"))
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// headerTransport adds a traceparent to every request, as a traced caller
// does.
type headerTransport struct{ next http.RoundTripper }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("traceparent", incoming)
	return t.next.RoundTrip(r)
}

// toolTurn starts Brain with the provider as environment box (and edit
// applied to its configuration), creates a session with the tool echo
// and runs one turn that calls it, sending a traceparent with each
// request. It answers the session and its events.
func toolTurn(t *testing.T, p *tracedProvider, edit func(*brain.Config)) (*braintest.Brain, *client.Session, []api.Event) {
	t.Helper()
	b := braintest.Start(t, braintest.Options{
		Environments: map[string]braintest.Environment{"box": {Handler: p.handler(), APIKey: providerKey}},
		Edit:         edit,
	})
	c, err := client.New(b.URL, &client.Options{Token: b.Token, HTTPClient: &http.Client{Transport: headerTransport{http.DefaultTransport}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.Sessions.Create(context.Background(), api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "box", Driver: "box"}},
		Tools: []api.Tool{{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{}`)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	script, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"name": "echo", "input": map[string]any{"n": 1}}}, "reply": "done"})
	if sum, err := sess.Send(context.Background(), api.UserInput{Message: string(script)}); err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("send: %+v %v", sum, err)
	}
	var events []api.Event
	for ev, err := range sess.Events(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	return b, sess, events
}

func sequenceOf(t *testing.T, events []api.Event, kind string) uint64 {
	t.Helper()
	for _, ev := range events {
		if ev.EventType == kind {
			return ev.Sequence
		}
	}
	t.Fatalf("no %s event in %d events", kind, len(events))
	return 0
}

// TestToolTurnSpansJoinOneTrace runs one tool turn with OTLP export to an
// in-process receiver and follows the parent chain from the caller's
// traceparent through the request, turn, activation, tool call and
// environment operation to the provider's own span.
func TestToolTurnSpansJoinOneTrace(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	// The provider exports its spans like a separate service would,
	// through the global API.
	ptp, stopProvider, err := tracing.NewTracerProvider(context.Background(), tracing.Settings{
		Endpoint: rcv.URL(), ServiceName: "provider", Headers: map[string]string{"x-collector-key": "provider"}})
	if err != nil {
		t.Fatal(err)
	}
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(ptp)
	defer otel.SetTracerProvider(prev)

	p := &tracedProvider{}
	b, sess, events := toolTurn(t, p, func(cfg *brain.Config) {
		cfg.OTLP = brain.OTLP{Endpoint: rcv.URL(), Headers: map[string]string{"x-collector-key": "k1"}, ServiceName: "brain-under-test"}
	})
	b.Stop() // flushes Brain's spans
	if err := stopProvider(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if rcv.Rejected() != 0 {
		t.Fatalf("the receiver rejected %d exports", rcv.Rejected())
	}
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
		for k, v := range s.Attributes {
			if str := fmt.Sprint(v); strings.Contains(str, providerKey) || strings.Contains(str, "Bearer") {
				t.Errorf("span %s attribute %s carries a credential: %q", s.Name, k, str)
			}
		}
	}
	find := func(name string, parent otlptest.Span) otlptest.Span {
		t.Helper()
		for _, s := range spans {
			if s.Name == name && (parent.SpanID == "" || s.ParentSpanID == parent.SpanID) {
				return s
			}
		}
		var names []string
		for _, s := range spans {
			names = append(names, fmt.Sprintf("%s(%s<-%s)", s.Name, s.SpanID, s.ParentSpanID))
		}
		t.Fatalf("no span %q under %q (%s); spans: %v", name, parent.Name, parent.SpanID, names)
		return otlptest.Span{}
	}
	attrs := func(s otlptest.Span, seq uint64) {
		t.Helper()
		if s.Attributes["brain.session_id"] != sess.ID {
			t.Errorf("span %s: brain.session_id = %v, want %s", s.Name, s.Attributes["brain.session_id"], sess.ID)
		}
		if seq != 0 && s.Attributes["brain.sequence"] != int64(seq) {
			t.Errorf("span %s: brain.sequence = %v, want %d", s.Name, s.Attributes["brain.sequence"], seq)
		}
		if s.StatusCode == "STATUS_CODE_ERROR" {
			t.Errorf("span %s failed: %s", s.Name, s.StatusText)
		}
	}

	req := find("POST /v1/sessions/{id}/messages", otlptest.Span{})
	if req.Kind != "SPAN_KIND_SERVER" || req.ParentSpanID != incomingParent || req.Service != "brain-under-test" ||
		req.Attributes["http.response.status_code"] != int64(200) {
		t.Errorf("request span %+v: want a server span under the caller's %s with status 200", req, incomingParent)
	}
	attrs(req, 0)
	turn := find("brain.turn", req)
	attrs(turn, sequenceOf(t, events, api.KindTurnStarted))
	act := find("brain.activation", turn)
	attrs(act, sequenceOf(t, events, api.KindActivationStarted))
	model := find("brain.model_call", act)
	attrs(model, sequenceOf(t, events, api.KindModelCallStarted))
	tool := find("brain.tool_call", act)
	attrs(tool, sequenceOf(t, events, api.KindToolCallStarted))
	if tool.Attributes["brain.tool"] != "echo" || tool.Attributes["brain.environment"] != "box" {
		t.Errorf("tool span attributes %v", tool.Attributes)
	}
	op := find("environment execute", tool)
	attrs(op, sequenceOf(t, events, api.KindToolCallStarted))
	if op.Kind != "SPAN_KIND_CLIENT" || op.Attributes["brain.receipt"] != "result" ||
		op.Attributes["http.response.status_code"] != int64(200) || op.Attributes["brain.driver"] != "box" {
		t.Errorf("environment span %+v: want a client span of driver box with the result receipt and HTTP status 200", op)
	}
	own := find("provider.execute", op)
	if own.Service != "provider" || own.Attributes["provider.input"] != `{"n":1}` {
		t.Errorf("provider span %+v", own)
	}
	callback := find("POST /v1/sessions/{id}/executions/{sequence}/call", own)
	if callback.Kind != "SPAN_KIND_SERVER" || callback.Attributes["http.response.status_code"] != int64(200) {
		t.Errorf("callback span %+v", callback)
	}
	for _, s := range []otlptest.Span{req, turn, act, model, tool, op, own, callback} {
		if s.TraceID != incomingTrace {
			t.Errorf("span %s is in trace %s, want the caller's %s", s.Name, s.TraceID, incomingTrace)
		}
	}
	// The session's create sent setup under its own request span.
	create := find("POST /v1/sessions", otlptest.Span{})
	find("environment setup", create)
	brainExports := 0
	for _, h := range rcv.Headers() {
		switch h.Get("X-Collector-Key") {
		case "k1":
			brainExports++
		case "provider":
		default:
			t.Errorf("an export came without the configured header: %v", h)
		}
	}
	if brainExports == 0 {
		t.Error("no export carried Brain's configured header")
	}
	// The provider saw the trace context of its operation's span.
	p.mu.Lock()
	defer p.mu.Unlock()
	want := "00-" + incomingTrace + "-" + op.SpanID + "-01"
	found := false
	for _, tp := range p.parents {
		found = found || tp == want
	}
	if !found {
		t.Errorf("the provider received traceparents %q, want one %q", p.parents, want)
	}
}

// TestNoOTLPNoTraceContext: without OTLP settings nothing is exported and
// no traceparent reaches a provider or a model endpoint, not even when
// the caller sent one. (A Brain that does not trace does not forward the
// caller's trace context either: it is off, not transparent.)
func TestNoOTLPNoTraceContext(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	// A collector in the process environment is not consulted: the
	// configuration is the only source.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
	for _, tc := range []struct {
		name string
		otlp brain.OTLP
	}{
		{"unset", brain.OTLP{}},
		// OTEL_SDK_DISABLED wins over an endpoint, and so does
		// OTEL_TRACES_EXPORTER=none for spans and trace context.
		{"disabled", brain.OTLP{Endpoint: rcv.URL(), Disabled: true}},
		{"traces_exporter_none", brain.OTLP{Endpoint: rcv.URL(), TracesExporter: "none", LogsExporter: "none"}},
	} {
		t.Run(tc.name, func(t *testing.T) { noTraceContext(t, rcv, tc.otlp) })
	}
}

func noTraceContext(t *testing.T, rcv *otlptest.Receiver, otlp brain.OTLP) {
	var mu sync.Mutex
	var modelParents []string
	chat := chatServer(func(r *http.Request) {
		mu.Lock()
		modelParents = append(modelParents, r.Header.Get("traceparent"), r.Header.Get("tracestate"))
		mu.Unlock()
	})
	defer chat.Close()
	p := &tracedProvider{}
	b, _, _ := toolTurn(t, p, func(cfg *brain.Config) { cfg.Models.OpenAIBaseURL = chat.URL + "/v1"; cfg.OTLP = otlp })
	chatTurn(t, b)
	b.Stop()
	if n := len(rcv.Spans()); n != 0 {
		t.Errorf("%d spans exported without OTLP settings", n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.parents) < 2 {
		t.Fatalf("the provider received %d operations, want setup and execute", len(p.parents))
	}
	for _, tp := range p.parents {
		if tp != "" {
			t.Errorf("the provider received traceparent %q from a Brain that does not trace", tp)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(modelParents) == 0 {
		t.Fatal("the model endpoint was not called")
	}
	for _, h := range modelParents {
		if h != "" {
			t.Errorf("the model endpoint received trace context %q", h)
		}
	}
}

// TestModelRequestsCarryTraceContext: a traced model call sends its
// span's traceparent to the model endpoint.
func TestModelRequestsCarryTraceContext(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	var mu sync.Mutex
	var parents []string
	chat := chatServer(func(r *http.Request) {
		mu.Lock()
		parents = append(parents, r.Header.Get("traceparent"))
		mu.Unlock()
	})
	defer chat.Close()
	b := braintest.Start(t, braintest.Options{Edit: func(cfg *brain.Config) {
		cfg.Models.OpenAIBaseURL = chat.URL + "/v1"
		cfg.OTLP.TracesEndpoint = rcv.URL() + "/v1/traces"
	}})
	chatTurn(t, b)
	b.Stop()
	var model otlptest.Span
	for _, s := range rcv.Spans() {
		if s.Name == "brain.model_call" {
			model = s
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if model.SpanID == "" || len(parents) != 1 || parents[0] != "00-"+model.TraceID+"-"+model.SpanID+"-01" {
		t.Fatalf("model endpoint got traceparents %q; model span %+v", parents, model)
	}
}

// chatServer is a Chat Completions endpoint answering "ok", telling seen
// of each request.
func chatServer(seen func(*http.Request)) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen(r)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`)
		fmt.Fprintf(w, "data: %s\n\n", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

// chatTurn runs one text turn on an openai_chat session, sending a
// traceparent.
func chatTurn(t *testing.T, b *braintest.Brain) {
	t.Helper()
	c, err := client.New(b.URL, &client.Options{Token: b.Token, HTTPClient: &http.Client{Transport: headerTransport{http.DefaultTransport}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.Sessions.Create(context.Background(), api.CreateSessionRequest{Model: api.ModelConfig{Provider: "openai_chat", Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := sess.Send(context.Background(), api.UserInput{Message: "hi"}); err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("send: %+v %v", sum, err)
	}
}

// TestOTLPConfigErrorsNameVariable: invalid OTLP settings are refused
// naming the field and its OTEL_* variable.
func TestOTLPConfigErrorsNameVariable(t *testing.T) {
	_, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), OTLP: brain.OTLP{
		Endpoint: "collector:4318", TracesProtocol: "http/json", LogsEndpoint: "ftp://u:sekrit@collector", Timeout: -1,
	}})
	var ce *brain.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *brain.ConfigError", err)
	}
	want := map[string]string{
		"OTLP.Endpoint":       "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTLP.TracesProtocol": "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTLP.LogsEndpoint":   "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
		"OTLP.Timeout":        "OTEL_EXPORTER_OTLP_TIMEOUT",
	}
	got := map[string]string{}
	for _, p := range ce.Problems {
		got[p.Field] = p.Env
	}
	for f, env := range want {
		if got[f] != env || !strings.Contains(err.Error(), "Config."+f+" ("+env+")") {
			t.Errorf("problem of %s names %q, want %q: %v", f, got[f], env, err)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want %d", ce.Problems, len(want))
	}
	if strings.Contains(err.Error(), "sekrit") {
		t.Errorf("the error quotes an endpoint: %v", err)
	}
}

// TestOTLPSignalEndpointQueryRefused: a signal's endpoint with a query
// (a key given as a parameter) or a fragment, which the exporters would
// not send, is refused at start naming its variable, without quoting it.
func TestOTLPSignalEndpointQueryRefused(t *testing.T) {
	_, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), OTLP: brain.OTLP{
		TracesEndpoint: "https://collector:4318/v1/traces?api_key=sekrit",
		LogsEndpoint:   "https://collector:4318/v1/logs#sekrit",
	}})
	var ce *brain.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *brain.ConfigError", err)
	}
	got := map[string]string{}
	for _, p := range ce.Problems {
		got[p.Field] = p.Env
	}
	want := map[string]string{
		"OTLP.TracesEndpoint": "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTLP.LogsEndpoint":   "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
	}
	if !maps.Equal(got, want) {
		t.Errorf("problems %v, want %v", got, want)
	}
	if strings.Contains(err.Error(), "sekrit") {
		t.Errorf("the error quotes an endpoint: %v", err)
	}
}

// TestOTLPHeadersRefusedWhenNoRequestCanCarryThem: a header whose name is
// not an HTTP token, or whose value holds a control character (a %0A
// decoded from OTEL_EXPORTER_OTLP_HEADERS), would fail every export; it
// is refused at start, naming its variable and not quoting the value.
func TestOTLPHeadersRefusedWhenNoRequestCanCarryThem(t *testing.T) {
	_, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), OTLP: brain.OTLP{
		Endpoint:      "http://127.0.0.1:4318",
		Headers:       map[string]string{"api key": "v", "x-ok": "fine"},
		TracesHeaders: map[string]string{"Authorization": "Bearer sekrit\n"},
	}})
	var ce *brain.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *brain.ConfigError", err)
	}
	want := map[string]string{
		"OTLP.Headers[api key]":             "OTEL_EXPORTER_OTLP_HEADERS",
		"OTLP.TracesHeaders[Authorization]": "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	}
	got := map[string]string{}
	for _, p := range ce.Problems {
		got[p.Field] = p.Env
	}
	for f, env := range want {
		if got[f] != env {
			t.Errorf("problem of %s names %q, want %q: %v", f, got[f], env, err)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want %d", ce.Problems, len(want))
	}
	if strings.Contains(err.Error(), "sekrit") {
		t.Errorf("the error quotes a header value: %v", err)
	}
}
