package envtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// plainProvider answers an execute returned (its Tool goes on), an
// operation named in answers with its receipt there, and any other
// accepted, with no SDK in between: whatever becomes of a grant is the
// fake Brain's doing.
func plainProvider(t *testing.T, answers ...map[envapi.RequestType]envapi.Receipt) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(data)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		receipt := envapi.Accepted()
		if cmd.Operation.Request.Type == envapi.RequestExecute {
			receipt = envapi.Returned(nil)
		}
		for _, a := range answers {
			if r, ok := a[cmd.Operation.Request.Type]; ok {
				receipt = r
			}
		}
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence, receipt))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Cancellation revokes the cancelled execution's callback, as Brain's
// does: a Tool that goes on emitting after the cancel is refused (401).
// Another execution's callback is untouched.
func TestCancelRevokesTheExecutionCallback(t *testing.T) {
	b := envtest.NewBrain(t)
	url := plainProvider(t)
	cmds := envtest.NewCommands("s1", "ws")
	cmds.Brain = b
	ctx := context.Background()
	cancelled := cmds.Execute(json.RawMessage(`"x"`), json.RawMessage(`{}`), nil)
	other := cmds.Execute(json.RawMessage(`"x"`), json.RawMessage(`{}`), nil)
	for _, cmd := range []envapi.Command{cancelled, other} {
		if _, body, _, err := envtest.Post(ctx, nil, url, "", cmd); err != nil {
			t.Fatalf("execute: %v %s", err, body)
		}
	}
	g := *cancelled.Operation.Request.Callback
	status, body := call(t, g, "emit", map[string]any{"event_type": "progress", "data": 1})
	want(t, "emit before the cancel", status, body, 200, "")

	if _, body, _, err := envtest.Post(ctx, nil, url, "", cmds.Cancel(cancelled.Operation.Sequence)); err != nil {
		t.Fatalf("cancel: %v %s", err, body)
	}
	status, body = call(t, g, "emit", map[string]any{"event_type": "progress", "data": 2})
	want(t, "emit after the cancel", status, body, 401, `"unauthorized"`)
	status, body = call(t, g, "finish", envapi.OK(json.RawMessage(`"late"`)))
	want(t, "finish after the cancel", status, body, 401, `"unauthorized"`)
	if !b.Revoked(g.Token) {
		t.Fatal("the cancelled execution's token is not revoked")
	}
	status, body = call(t, *other.Operation.Request.Callback, "emit", map[string]any{"event_type": "progress", "data": 3})
	want(t, "emit of another execution", status, body, 200, "")
}

// An execute's callback stays valid after the execute returned, under its
// original deadline only, as Brain's does.
func TestExecuteCallbackExpiresAtItsDeadline(t *testing.T) {
	b := envtest.NewBrain(t)
	url := plainProvider(t)
	cmds := envtest.NewCommands("s1", "ws")
	cmds.Brain = b
	ctx := context.Background()
	short := cmds.Execute(json.RawMessage(`"x"`), json.RawMessage(`{}`), envtest.Millis(1))
	long := cmds.Execute(json.RawMessage(`"x"`), json.RawMessage(`{}`), envtest.Millis(time.Hour.Milliseconds()))
	for _, cmd := range []envapi.Command{short, long} {
		if _, body, _, err := envtest.Post(ctx, nil, url, "", cmd); err != nil {
			t.Fatalf("execute: %v %s", err, body)
		}
	}
	time.Sleep(20 * time.Millisecond) // past the 1 ms deadline
	status, body := call(t, *short.Operation.Request.Callback, "finish", envapi.OK(json.RawMessage(`"late"`)))
	want(t, "finish past the deadline", status, body, 401, `"unauthorized"`)
	status, body = call(t, *long.Operation.Request.Callback, "finish", envapi.OK(json.RawMessage(`"done"`)))
	want(t, "finish within the deadline", status, body, 200, "")
}

// report posts a diagnostic to the reporter grant g.
func report(t *testing.T, g *envapi.Grant) (int, string) {
	t.Helper()
	if g == nil {
		t.Fatal("the command carried no reporter grant")
	}
	status, body, err := post(t, g.URL, g.Token, envapi.ReporterEvent{Type: "event", EventType: "probe", Data: json.RawMessage(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	return status, body
}

// A binding Brain recorded detached or deleted takes no more reports (404
// not_found, as Brain answers); one whose release is unknown still does,
// for the provider to report how it resolved.
func TestReleasedBindingRefusesReports(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		typ     envapi.RequestType
		release func(*envtest.Commands) envapi.Command
		answer  envapi.Receipt
		status  int
		body    string
	}{
		{"detached", envapi.RequestDetach, (*envtest.Commands).Detach, envapi.Accepted(), 404, `"not_found"`},
		{"detach failed", envapi.RequestDetach, (*envtest.Commands).Detach, envapi.Failure("busy", "calls are running", false, nil), 404, `"not_found"`},
		{"torn down", envapi.RequestTeardown, (*envtest.Commands).Teardown, envapi.Accepted(), 404, `"not_found"`},
		{"teardown failed", envapi.RequestTeardown, (*envtest.Commands).Teardown, envapi.Failure("busy", "calls are running", false, nil), 200, `"sequence"`},
		{"teardown unknown", envapi.RequestTeardown, (*envtest.Commands).Teardown, envapi.Unknown("lost"), 200, `"sequence"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := envtest.NewBrain(t)
			url := plainProvider(t, map[envapi.RequestType]envapi.Receipt{tc.typ: tc.answer})
			cmds := envtest.NewCommands("s1", "ws")
			cmds.Brain = b
			other := cmds.For("other")
			for _, cmd := range []envapi.Command{cmds.Setup(nil), other.Setup(nil)} {
				if _, body, _, err := envtest.Post(ctx, nil, url, "", cmd); err != nil {
					t.Fatalf("setup: %v %s", err, body)
				}
			}
			status, body := report(t, cmds.Reporter())
			want(t, "report while set up", status, body, 200, `"sequence"`)
			if _, body, _, err := envtest.Post(ctx, nil, url, "", tc.release(cmds)); err != nil {
				t.Fatalf("release: %v %s", err, body)
			}
			status, body = report(t, cmds.Reporter())
			want(t, "report after the release", status, body, tc.status, tc.body)
			status, body = report(t, other.Reporter())
			want(t, "report of another binding", status, body, 200, `"sequence"`)
		})
	}
}
