package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// answering is a callback endpoint that answers every call 200 with body.
func answering(t *testing.T, body string) *envsdk.Invocation {
	t.Helper()
	return refusing(t, http.StatusOK, body)
}

// refusing is answering with status.
func refusing(t *testing.T, status int, body string) *envsdk.Invocation {
	t.Helper()
	brain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(brain.Close)
	methods := append(envapi.ToolMethods(), envapi.AgentloopMethods()...)
	g := &envapi.Grant{URL: brain.URL + "/call", Token: "cb-token", Methods: methods}
	p := &invocationKeeper{got: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, p, nil)
	send(t, srv, execute(2, "x", nil, g))
	return <-p.got
}

// An answer of Brain that is not what the method answers is an error,
// never a success read from it: a dispatch answered with null or with
// returns that are not one per call in call order, a kv_read answered
// with null, a model, events or environments answer that is not JSON, a
// committed sequence that is not a JSON integer (for finish, a lost
// acknowledgement).
func TestMalformedCallbackAnswersAreErrors(t *testing.T) {
	ctx := context.Background()
	calls := []envapi.ToolInvocation{{CallID: "a", Name: "t", Input: json.RawMessage(`{}`)}, {CallID: "b", Name: "t", Input: json.RawMessage(`{}`)}}
	for _, body := range []string{`null`, `[]`, `[{"call_id":"a","sequence":7,"events":[],"finished":true}]`,
		`[{"call_id":"b","sequence":7,"events":[],"finished":true},{"call_id":"a","sequence":8,"events":[],"finished":true}]`} {
		if out, err := answering(t, body).Dispatch(ctx, calls); !errors.Is(err, envsdk.ErrMalformedAnswer) {
			t.Errorf("dispatch of 2 calls answered %s = %+v, %v; want ErrMalformedAnswer", body, out, err)
		}
	}
	if v, found, err := answering(t, `null`).KVRead(ctx, "k"); !errors.Is(err, envsdk.ErrMalformedAnswer) {
		t.Errorf("kv_read answered null = %q, %v, %v; want ErrMalformedAnswer", v, found, err)
	}
	for _, body := range []string{`{"message":`, ``, "\"\xff\""} {
		inv := answering(t, body)
		if out, err := inv.Model(ctx, json.RawMessage(`{"messages":[]}`)); !errors.Is(err, envsdk.ErrMalformedAnswer) {
			t.Errorf("model answered %q = %q, %v; want ErrMalformedAnswer", body, out, err)
		}
		if out, err := inv.Events(ctx, 0); err == nil {
			t.Errorf("events answered %q = %q, want an error", body, out)
		}
		if out, err := inv.Environments(ctx, envapi.ControlRequest{}); err == nil {
			t.Errorf("environments answered %q = %q, want an error", body, out)
		}
	}
	for _, body := range []string{`007`, "\u00a05", `+5`, `5.0`} {
		inv := answering(t, body)
		if seq, err := inv.Emit(ctx, "x", nil); !errors.Is(err, envsdk.ErrMalformedAnswer) {
			t.Errorf("emit answered %q = %d, %v; want ErrMalformedAnswer", body, seq, err)
		}
		if seq, err := inv.Finish(ctx, nil); !errors.Is(err, envsdk.ErrAckLost) {
			t.Errorf("finish answered %q = %d, %v; want ErrAckLost", body, seq, err)
		}
	}
	huge := `[{"call_id":"a","sequence":1` + strings.Repeat("0", 100<<10) + `}]`
	if _, err := answering(t, huge).Dispatch(ctx, calls[:1]); err == nil || len(err.Error()) > 1024 {
		t.Errorf("dispatch answered a 100 KiB number: error of %d bytes, want a short one", len(errString(err)))
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCallErrorIsBounded: the code and message of a refusal come from the
// answering server's body; they are cut to envapi.MaxMessageLen, as a
// failure receipt's message is, before they reach an error or a log.
func TestCallErrorIsBounded(t *testing.T) {
	long := strings.Repeat("é", 20000)
	g := refusing(t, http.StatusConflict, `{"code":"`+long+`","message":"`+long+`"}`)
	_, err := g.Emit(context.Background(), "x", nil)
	var ce *envsdk.CallError
	if !errors.As(err, &ce) || ce.Status != http.StatusConflict {
		t.Fatalf("emit refused with 409 = %v, want a *CallError", err)
	}
	if len(ce.Code) > envapi.MaxMessageLen || len(ce.Message) > envapi.MaxMessageLen || !utf8.ValidString(ce.Message) || !strings.HasPrefix(long, ce.Message) {
		t.Errorf("CallError holds a %d-byte code and a %d-byte message, want at most %d valid bytes each", len(ce.Code), len(ce.Message), envapi.MaxMessageLen)
	}
}
