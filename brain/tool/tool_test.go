package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

func TestExport(t *testing.T) {
	if Exported() != nil {
		t.Fatal("a tool is exported before Export")
	}
	Export(func(context.Context, Services, Invocation) (api.Outcome, error) { return OK(nil), nil })
	defer Export(nil)
	o, err := Exported()(context.Background(), nil, Invocation{})
	if err != nil || o.Status != api.OutcomeOK || string(o.Value) != "null" {
		t.Fatalf("%+v %v", o, err)
	}
}

// The run answer carries the outcome, or the error with the ref of the
// refused service call it wraps.
func TestAnswer(t *testing.T) {
	if got := string(encodeAnswer(OK(json.RawMessage(`{"a":1}`)), nil)); got != `{"outcome":{"status":"ok","value":{"a":1}}}` {
		t.Fatal(got)
	}
	if got := string(encodeAnswer(Error("nope", "no"), nil)); got != `{"outcome":{"status":"error","error":{"code":"nope","message":"no","retryable":false}}}` {
		t.Fatal(got)
	}
	he := &HostError{Method: "emit", Code: api.CodeReservedName, Message: "reserved", Ref: 3}
	var ans runAnswer
	if err := json.Unmarshal(encodeAnswer(api.Outcome{}, fmt.Errorf("emitting: %w", he)), &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Outcome != nil || ans.Error == nil || ans.Error.Ref != 3 || ans.Error.Message != "emitting: tool: emit: reserved_name: reserved" {
		t.Fatalf("%+v", ans.Error)
	}
	err := decodeHostError("emit", []byte(`{"code":"not_granted","message":"m","ref":2}`))
	if !errors.As(err, &he) || he.Code != "not_granted" || he.Ref != 2 || he.Method != "emit" {
		t.Fatalf("%v", err)
	}
	if err := decodeHostError("emit", []byte(`{`)); errors.As(err, &he) {
		t.Fatal("garbage decoded as a host error")
	}
}

func FuzzInvocation(f *testing.F) {
	f.Add([]byte(`{"input":{"a":1},"configuration":null,"deadline_at_ms":12}`))
	f.Add([]byte(`{"input":"x"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		inv, err := decodeInvocation(b)
		if err != nil {
			return
		}
		raw, err := json.Marshal(inv)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode it: %v", b, err)
		}
		again, err := decodeInvocation(raw)
		if err != nil || again.DeadlineAtMs != inv.DeadlineAtMs {
			t.Fatalf("round trip of %q: %+v %v", b, again, err)
		}
	})
}
