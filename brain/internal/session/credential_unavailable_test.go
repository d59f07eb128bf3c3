package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// flakySecrets is a MemSecrets whose first Get fails.
type flakySecrets struct {
	*MemSecrets
	failed atomic.Bool
}

func (f *flakySecrets) Get(ctx context.Context, session, name string) ([]byte, error) {
	if f.failed.CompareAndSwap(false, true) {
		return nil, errors.New("secrets: store unavailable")
	}
	return f.MemSecrets.Get(ctx, session, name)
}

// An environment's operations carry the credential it was declared with:
// when the credential cannot be read, the operation is not sent without
// it but fails (retryable), and a later operation carries it again.
func TestCredentialUnavailableIsNotDroppedSilently(t *testing.T) {
	ctx := context.Background()
	sec := &flakySecrets{MemSecrets: NewMemSecrets()}
	h := newHarness(t, Config{Secrets: sec, IdleTTL: KeepIdle}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Environments[0].Lifecycle = api.LifecycleManual
	id := h.create(req)
	setup := func() envapi.EnvironmentView {
		t.Helper()
		raw, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlSetup, Environment: &envapi.EnvironmentRef{Name: "box", Sequence: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return decode[envapi.EnvironmentView](t, raw)
	}
	if v := setup(); v.State != envapi.StateFailed {
		t.Fatalf("setup without a readable credential: %s", v.State)
	}
	if ops := h.envs.opsOf(envapi.RequestSetup); len(ops) != 0 {
		t.Fatalf("setup delivered with credential %q", ops[0].Credential)
	}
	f := decode[api.Failure](t, ofKind(h.records(id), api.KindEnvironmentSetupFailed)[0].Data)
	if f.Code != codeCredentialUnavailable || !f.Retryable || f.Ambiguous {
		t.Fatalf("setup failure %+v", f)
	}
	if v := setup(); v.State != envapi.StateReady {
		t.Fatalf("second setup: %s", v.State)
	}
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})}); err != nil {
		t.Fatal(err)
	}
	ops := append(h.envs.opsOf(envapi.RequestSetup), h.envs.opsOf(envapi.RequestExecute)...)
	if len(ops) != 2 {
		t.Fatalf("%d operations delivered, want a setup and an execute", len(ops))
	}
	for _, op := range ops {
		if op.Credential != "env-secret-cred" {
			t.Errorf("%s operation %d delivered with credential %q", op.Request.Type, op.Sequence, op.Credential)
		}
	}
}

// A report is recorded as its Redact answers, given its binding's
// credential read from Secrets; when that credential cannot be read the
// report is refused (ErrUnavailable) and nothing is recorded.
func TestReportRedactedWithTheBindingCredential(t *testing.T) {
	ctx := context.Background()
	sec := &flakySecrets{MemSecrets: NewMemSecrets()}
	h := newHarness(t, Config{Secrets: sec, IdleTTL: KeepIdle}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Environments[0].Lifecycle = api.LifecycleManual
	id := h.create(req)
	var seen []string
	report := func() (uint64, error) {
		return h.engine.Report(ctx, id, api.EnvironmentRef{Name: "box", Sequence: 1}, Report{Type: ReportEvent, EventType: "quoted",
			Data: json.RawMessage(`{"key":"env-secret-cred"}`),
			Redact: func(op Operation, raw json.RawMessage) json.RawMessage {
				seen = append(seen, op.Environment+" "+op.Credential+" "+op.Authorized.URL)
				return json.RawMessage(strings.ReplaceAll(string(raw), op.Credential, "[redacted]"))
			}})
	}
	before := len(h.records(id))
	if _, err := report(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("report without a readable credential: %v, want ErrUnavailable", err)
	}
	if n := len(h.records(id)); n != before || len(seen) != 0 {
		t.Fatalf("a refused report recorded %d records and was redacted %d times", n-before, len(seen))
	}
	seq, err := report()
	if err != nil {
		t.Fatal(err)
	}
	if want := "box env-secret-cred http://127.0.0.1:1"; len(seen) != 1 || seen[0] != want {
		t.Fatalf("Redact saw %q, want %q", seen, want)
	}
	for _, r := range h.records(id) {
		if r.Sequence == seq && !strings.Contains(string(r.Data), `{"key":"[redacted]"}`) {
			t.Fatalf("recorded %s", r.Data)
		}
	}
}
