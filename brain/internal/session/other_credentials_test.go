package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// tallySecrets is a MemSecrets that counts its reads by name and fails
// the first read of failName.
type tallySecrets struct {
	*MemSecrets
	failName string
	mu       sync.Mutex
	reads    map[string]int
}

func (c *tallySecrets) Get(ctx context.Context, session, name string) ([]byte, error) {
	c.mu.Lock()
	c.reads[name]++
	n := c.reads[name]
	c.mu.Unlock()
	if name == c.failName && n == 1 {
		return nil, errors.New("secrets: store unavailable")
	}
	return c.MemSecrets.Get(ctx, session, name)
}

// Every operation carries the credential of each declared environment of
// the session (Operation.Targets), which a provider serving several of
// them was sent: one whose credential cannot be read is not sent (its
// answer could not be kept from recording it) and fails, retryable,
// naming that environment. The credentials are read once while the
// session is in memory, not for each operation.
func TestOperationsCarryTheSessionsCredentials(t *testing.T) {
	ctx := context.Background()
	sec := &tallySecrets{MemSecrets: NewMemSecrets(), failName: SecretEnvironmentCredential("other"), reads: map[string]int{}}
	h := newHarness(t, Config{Secrets: sec, IdleTTL: KeepIdle}, map[string]string{"box": "echo", "other": "echo"})
	req := toolSession("echo")
	req.Environments[0].Lifecycle = api.LifecycleManual
	req.Environments = append(req.Environments,
		api.Environment{Name: "other", Driver: api.DriverHTTP, URL: "http://127.0.0.1:2", Credential: "other-secret-cred", Lifecycle: api.LifecycleManual},
		api.Environment{Name: "plain", Driver: api.DriverHTTP, URL: "http://127.0.0.1:3", Lifecycle: api.LifecycleManual})
	id := h.create(req)
	setup := func(name string) envapi.EnvironmentView {
		t.Helper()
		raw, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlSetup, Environment: &envapi.EnvironmentRef{Name: name, Sequence: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return decode[envapi.EnvironmentView](t, raw)
	}
	if v := setup("box"); v.State != envapi.StateFailed {
		t.Fatalf("setup of box while the credential of other cannot be read: %s", v.State)
	}
	if ops := h.envs.opsOf(envapi.RequestSetup); len(ops) != 0 {
		t.Fatalf("setup delivered without the credential of other: %+v", ops[0].Targets)
	}
	f := decode[api.Failure](t, ofKind(h.records(id), api.KindEnvironmentSetupFailed)[0].Data)
	if f.Code != codeCredentialUnavailable || !f.Retryable || f.Ambiguous || !strings.Contains(f.Message, "environment other") {
		t.Fatalf("setup failure %+v", f)
	}
	for _, name := range []string{"box", "other"} {
		if v := setup(name); v.State != envapi.StateReady {
			t.Fatalf("setup of %s: %s", name, v.State)
		}
	}
	want := map[string]string{"box": "env-secret-cred", "other": "other-secret-cred", "plain": ""}
	ops := h.envs.opsOf(envapi.RequestSetup)
	if len(ops) != 2 {
		t.Fatalf("%d setups delivered, want 2", len(ops))
	}
	for _, op := range ops {
		got := map[string]string{}
		for _, tg := range op.Targets {
			got[tg.Authorized.Name] = tg.Credential
			if tg.Authorized.URL == "" {
				t.Errorf("%s: target %s without its declaration", op.Environment, tg.Authorized.Name)
			}
		}
		if len(got) != len(want) || got["box"] != want["box"] || got["other"] != want["other"] || got["plain"] != "" {
			t.Errorf("%s: targets %v, want %v", op.Environment, got, want)
		}
	}
	sec.mu.Lock()
	defer sec.mu.Unlock()
	for _, name := range []string{"box", "other", "plain"} {
		// other: the failed read and the one that succeeded.
		max := 1
		if name == "other" {
			max = 2
		}
		if n := sec.reads[SecretEnvironmentCredential(name)]; n > max {
			t.Errorf("the credential of %s read %d times", name, n)
		}
	}
}
