package envbind

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// An operation Brain could not send (its public URL is not known yet, the
// server key cannot be read, its environment has no route any more) was
// certainly not sent: it fails with a definite failure saying why, not an
// unknown outcome, and nothing reaches the provider.
func TestOperationNotSentIsADefiniteFailure(t *testing.T) {
	var posts atomic.Int32
	srv := provider(t, func(context.Context, envapi.Operation) envapi.Receipt {
		posts.Add(1)
		return envapi.Accepted()
	})
	badKey := filepath.Join(t.TempDir(), KeyFileName)
	if err := os.WriteFile(badKey, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	noPublic, err := New(Config{Key: make([]byte, keySize)})
	if err != nil {
		t.Fatal(err)
	}
	defer noPublic.Close()
	routed := op("", 5)
	routed.Declaration = api.Environment{Name: "box", Driver: "gone"}
	for _, c := range []struct {
		name      string
		b         *Binder
		op        session.Operation
		code      string
		retryable bool
	}{
		{"public URL unknown", noPublic, op(srv.URL, 5), CodeNotSent, true},
		{"key unreadable", testBinder(t, Config{KeyFile: badKey}), op(srv.URL, 5), CodeNotSent, true},
		{"no route", testBinder(t, Config{}), routed, CodeNoRoute, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc, err := c.b.Deliver(t.Context(), c.op)
			if err != nil {
				t.Fatalf("Deliver: %v, want a failure receipt", err)
			}
			if rc.Type != envapi.ReceiptFailure || rc.Code != c.code || rc.Retryable != c.retryable || rc.Message == "" {
				t.Errorf("receipt %+v, want failure %s (retryable %v)", rc, c.code, c.retryable)
			}
		})
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("the provider saw %d operations", n)
	}
}

// A session whose environment's route left the configuration (across a
// restart) records the environment's setup as failed, not unknown, and
// does not mark the environment unreachable.
func TestRouteGoneRecordsFailureNotUnknown(t *testing.T) {
	srv := provider(t, func(context.Context, envapi.Operation) envapi.Receipt { return envapi.Accepted() })
	dir := t.TempDir()
	open := func(routes map[string]Route) (*session.Engine, journal.Store) {
		store, err := journal.OpenFileStore(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		engine, err := session.New(session.Config{Store: store, Environments: testBinder(t, Config{Routes: routes})})
		if err != nil {
			t.Fatal(err)
		}
		return engine, store
	}
	stop := func(engine *session.Engine, store journal.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = engine.Close(ctx)
		_ = store.Close()
	}
	engine, store := open(map[string]Route{"routed": {Endpoint: srv.URL}})
	sum, err := engine.Create(context.Background(), "", api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "box", Driver: "routed", Lifecycle: api.LifecycleManual}},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop(engine, store)
	engine, store = open(nil)
	defer stop(engine, store)
	raw, err := engine.Control(context.Background(), sum.SessionID, envapi.ControlRequest{Operation: envapi.ControlSetup, Environment: &envapi.EnvironmentRef{Name: "box", Sequence: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var view envapi.EnvironmentView
	if err := json.Unmarshal(raw, &view); err != nil || view.State != envapi.StateFailed {
		t.Fatalf("setup: %s %v", raw, err)
	}
	var f api.Failure
	for _, r := range readAll(t, store, sum.SessionID) {
		switch r.Kind {
		case api.KindEnvironmentUnreachable:
			t.Errorf("environment marked unreachable: %s", r.Data)
		case api.KindEnvironmentSetupFailed:
			_ = json.Unmarshal(r.Data, &f)
		}
	}
	if f.Code != CodeNoRoute || f.Ambiguous || f.Retryable {
		t.Errorf("setup failure %+v, want %s, not ambiguous", f, CodeNoRoute)
	}
}

// A server key that could not be read or created for one operation (its
// directory could not be made) fails that operation not_sent, retryable;
// once the cause is gone, the next operation is sent, with a reporter
// token that checks: the failure is not kept.
func TestKeyFailurePassesWhenItsCausePasses(t *testing.T) {
	var posts atomic.Int32
	srv := provider(t, func(context.Context, envapi.Operation) envapi.Receipt {
		posts.Add(1)
		return envapi.Accepted()
	})
	dir := t.TempDir()
	// A file stands where the key's directory goes.
	blocker := filepath.Join(dir, "server-metadata")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b := testBinder(t, Config{KeyFile: filepath.Join(blocker, KeyFileName)})
	rc, err := b.Deliver(t.Context(), op(srv.URL, 5))
	if err != nil || rc.Type != envapi.ReceiptFailure || rc.Code != CodeNotSent || !rc.Retryable {
		t.Fatalf("key unavailable: receipt %+v err %v, want failure %s (retryable)", rc, err, CodeNotSent)
	}
	if ok, err := b.AuthorizeReporter("ses_AAAAAAAAAAAAAAAAAAAA", "box", 1, "x"); ok || err == nil {
		t.Fatalf("AuthorizeReporter with no key = %v %v, want an error", ok, err)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	var sent envapi.Operation
	srv2 := provider(t, func(_ context.Context, o envapi.Operation) envapi.Receipt {
		sent = o
		return envapi.Accepted()
	})
	rc, err = b.Deliver(t.Context(), op(srv2.URL, 6))
	if err != nil || rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("once the key can be made: receipt %+v err %v, want accepted", rc, err)
	}
	if sent.Reporter == nil {
		t.Fatal("the operation carried no reporter grant")
	}
	if ok, err := b.AuthorizeReporter("ses_AAAAAAAAAAAAAAAAAAAA", "box", 1, sent.Reporter.Token); !ok || err != nil {
		t.Fatalf("the reporter token sent = %v %v, want authorized", ok, err)
	}
	if n := posts.Load(); n != 0 {
		t.Fatalf("the operation that failed reached a provider %d times", n)
	}
}
