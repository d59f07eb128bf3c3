package envbind

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A provider runs two tool calls of one session at once. Its failure
// answer to one quotes the tokens it was sent for the other, which is
// still running (their invocation and controller context tokens are
// live: whoever reads them could post that call's result). Neither token
// reaches the journal on disk, the session's events, the log or the
// exported spans.
func TestRunningOperationsTokensNeverRecorded(t *testing.T) {
	const cred = "sekrit-XYZ-cred"
	var (
		mu     sync.Mutex
		tokens []string
	)
	slowArrived, quoted := make(chan struct{}), make(chan struct{})
	var quotedOnce sync.Once
	endQuote := func() { quotedOnce.Do(func() { close(quoted) }) }
	srv := provider(t, func(_ context.Context, op envapi.Operation) envapi.Receipt {
		if op.Request.Type != envapi.RequestExecute {
			return envapi.Accepted()
		}
		var impl struct{ Kind string }
		_ = json.Unmarshal(op.Request.Implementation, &impl)
		switch impl.Kind {
		case "slow":
			mu.Lock()
			tokens = append(tokens, op.Request.Callback.Token, op.Context.Token)
			mu.Unlock()
			close(slowArrived)
			<-quoted // answered only once the other call ended
			return envapi.Result(json.RawMessage(`{"done":true}`))
		default:
			<-slowArrived
			mu.Lock()
			quote := strings.Join(tokens, " ")
			mu.Unlock()
			details, _ := json.Marshal(map[string]string{"busy_with": quote})
			return envapi.Failure("busy", "already running the call of "+quote, false, details)
		}
	})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	b := testBinder(t, Config{Logger: logger, Tracer: tp.Tracer("envbind")})
	dir := t.TempDir()
	store, err := journal.OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := session.New(session.Config{Store: store, Environments: b, Tracer: tp.Tracer("session")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = engine.Close(ctx)
		_ = store.Close()
	})
	// The provider's handler returns before the engine and the server
	// close, also when the test stops early.
	t.Cleanup(endQuote)
	tool := func(name string) api.Tool {
		return api.Tool{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{"kind":"` + name + `"}`)}}}
	}
	ctx := context.Background()
	sum, err := engine.Create(ctx, "", api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: srv.URL, Credential: cred}},
		Tools:        []api.Tool{tool("slow"), tool("quoter")},
	})
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("create: %+v %v", sum, err)
	}
	id := sum.SessionID
	sent := make(chan error, 1)
	go func() {
		_, err := engine.Send(ctx, id, api.UserInput{Message: `{"tool_calls":[{"name":"slow","input":{}},{"name":"quoter","input":{}}]}`})
		sent <- err
	}()
	// The quoting call ends while the other still runs.
	waitEvent(t, engine, id, api.KindToolCallEnded)
	endQuote()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	failed := false
	for _, ev := range eventsOf(t, engine, id, api.KindToolCallEnded) {
		var ended api.ToolCallEnded
		if err := json.Unmarshal(ev.Data, &ended); err != nil {
			t.Fatal(err)
		}
		if ended.Outcome.Error != nil && ended.Outcome.Error.Code == "busy" {
			failed = true
		}
	}
	if !failed {
		t.Fatal("the quoting call did not end with the provider's failure")
	}
	mu.Lock()
	secrets := append([]string{cred}, tokens...)
	mu.Unlock()
	if len(secrets) != 3 {
		t.Fatalf("the running call carried %d tokens, want 2", len(secrets)-1)
	}
	check := func(where string, data []byte) {
		t.Helper()
		for i, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("secret %d found in %s", i, where)
			}
		}
	}
	named := make(map[string]string)
	for i, s := range secrets {
		named[fmt.Sprintf("secret %d", i)] = s
	}
	notJournaled(t, dir, named)
	page, err := engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Events {
		check("event "+ev.EventType, ev.Data)
	}
	check("the log", logs.Bytes())
	ended := spans.Ended()
	if len(ended) == 0 {
		t.Fatal("no span was exported")
	}
	for _, s := range ended {
		check("span "+s.Name()+" status", []byte(s.Status().Description))
		for _, a := range s.Attributes() {
			check("span "+s.Name()+" attribute "+string(a.Key), []byte(a.Value.String()))
		}
		for _, e := range s.Events() {
			for _, a := range e.Attributes {
				check("span "+s.Name()+" event "+e.Name, []byte(a.Value.String()))
			}
		}
	}
}
