package session

import (
	"context"
	"errors"
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
