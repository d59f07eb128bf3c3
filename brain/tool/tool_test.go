package tool

import (
	"bytes"
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

// The hand decoder of the invocation agrees with encoding/json on every
// document it accepts.
func FuzzInvocation(f *testing.F) {
	f.Add([]byte(`{"input":{"a":[1,"}"]},"configuration":null,"deadline_at_ms":12}`))
	f.Add([]byte(`{"input":"x\"y","other":{"k":[]}}`))
	f.Add([]byte(`{"input":"x"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		inv, err := decodeInvocation(b)
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", b, err)
		}
		var deadline int64
		if d, ok := m["deadline_at_ms"]; ok {
			if err := json.Unmarshal(d, &deadline); err != nil {
				t.Fatalf("accepted deadline %s: %v", d, err)
			}
		}
		if !sameJSON(inv.Input, m["input"]) || !sameJSON(inv.Configuration, m["configuration"]) || inv.DeadlineAtMs != deadline {
			t.Fatalf("%q: decoded %+v, encoding/json %v", b, inv, m)
		}
	})
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b) || string(a)+string(b) == "null"
	}
	if string(a) == string(b) {
		return true
	}
	x, errA := decodeAny(a)
	y, errB := decodeAny(b)
	return errA == nil && errB == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// decodeAny reads JSON keeping numbers as written, so that a number too
// large for a float64 still compares equal to itself.
func decodeAny(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// Outcomes encode to the bytes json.Marshal writes and read back the same
// through encoding/json.
func FuzzOutcome(f *testing.F) {
	f.Add("ok", "a\"b\n\u2028", "code", []byte(`{"x":1}`))
	f.Add("error", "\xff\x00", "", []byte(`nope`))
	f.Fuzz(func(t *testing.T, status, text, code string, value []byte) {
		o := api.Outcome{Status: status, Message: text, Value: value}
		if code != "" {
			o.Error = &api.OutcomeError{Code: code, Message: text, Retryable: len(text)%2 == 0}
		}
		b, err := encodeOutcome(&o)
		if err != nil {
			if json.Valid(value) {
				t.Fatalf("refused valid value %q: %v", value, err)
			}
			return
		}
		if want, err := json.Marshal(o); err == nil && string(b) != string(want) {
			t.Fatalf("encoded %s, json.Marshal writes %s", b, want)
		}
		var got api.Outcome
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q encoded as invalid JSON %s: %v", text, b, err)
		}
		want, _ := json.Marshal(o)
		var w api.Outcome
		_ = json.Unmarshal(want, &w)
		if got.Status != w.Status || got.Message != w.Message || !sameJSON(got.Value, w.Value) ||
			(got.Error == nil) != (w.Error == nil) ||
			(got.Error != nil && (got.Error.Code != w.Error.Code || got.Error.Message != w.Error.Message || got.Error.Retryable != w.Error.Retryable)) {
			t.Fatalf("outcome %+v read back as %+v (encoding/json: %+v)", o, got, w)
		}
	})
}

// The emit service's input encodes to the bytes json.Marshal writes for
// the same event, and an invalid data document is refused.
func FuzzEmit(f *testing.F) {
	f.Add("progress", []byte(`{"done": 3, "of": 4}`))
	f.Add("a\"b\n\u2028<", []byte(``))
	f.Add("x", []byte(`{"unterminated`))
	f.Fuzz(func(t *testing.T, eventType string, data []byte) {
		b, err := encodeEmit(eventType, data)
		if err != nil {
			if len(data) == 0 || json.Valid(data) {
				t.Fatalf("refused valid data %q: %v", data, err)
			}
			return
		}
		if len(data) > 0 && !json.Valid(data) {
			t.Fatalf("accepted invalid data %q as %s", data, b)
		}
		in := struct {
			EventType string          `json:"event_type"`
			Data      json.RawMessage `json:"data"`
		}{eventType, data}
		if len(data) == 0 {
			in.Data = nil
		}
		want, err := json.Marshal(in)
		if err == nil && string(b) != string(want) {
			t.Fatalf("encoded %s, json.Marshal writes %s", b, want)
		}
		if !json.Valid(b) {
			t.Fatalf("encoded invalid JSON %s", b)
		}
	})
}
