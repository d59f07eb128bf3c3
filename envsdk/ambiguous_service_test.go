package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// spawner creates an environment through its controller context, from a
// method and from an execute, and answers the error of that call as it
// came.
type spawner struct{ envsdk.Base }

func (spawner) spawn(c *envsdk.Ctx) error {
	_, err := c.Environments(c.Context(), envapi.ControlRequest{Operation: envapi.ControlCreate,
		Template: "box", Name: "box_2", Configuration: json.RawMessage(`{}`)})
	return err
}

func (s spawner) Methods() map[string]envsdk.Method {
	return map[string]envsdk.Method{"spawn": {Run: func(c *envsdk.Ctx, _ json.RawMessage) (any, error) {
		return map[string]bool{"spawned": true}, s.spawn(c)
	}}}
}

func (s spawner) Execute(c *envsdk.Ctx, _ *envsdk.Execution) (envapi.Receipt, error) {
	if err := s.spawn(c); err != nil {
		return envapi.Receipt{}, err
	}
	return envsdk.Output("spawned")
}

// A service call Brain answers ambiguous may have taken effect (the
// environment may exist): the operation that returns its error is
// answered unknown, never as a definite failure. A refusal (4xx) is
// still a failure, and so is a 5xx with another code.
func TestAmbiguousServiceAnswerIsUnknown(t *testing.T) {
	cases := []struct {
		name   string
		status int
		code   string
		want   envapi.ReceiptType
	}{
		{"ambiguous", http.StatusInternalServerError, "ambiguous", envapi.ReceiptUnknown},
		{"refused", http.StatusConflict, "conflict", envapi.ReceiptFailure},
		{"internal", http.StatusInternalServerError, "internal", envapi.ReceiptFailure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := envtest.NewBrain(t)
			b.Handle(envapi.MethodEnvironments, func(envtest.Call) (int, any) {
				return tc.status, map[string]any{"code": tc.code, "message": "the answer was lost", "retryable": false}
			})
			srv := serve(t, spawner{}, nil)
			cmds := envtest.NewCommands("ses_1", "env")
			cmds.Brain = b
			ctx := context.Background()
			if _, _, r, err := envtest.Post(ctx, nil, srv.URL, token, cmds.Setup(nil)); err != nil || r.Receipt.Type != envapi.ReceiptAccepted {
				t.Fatalf("setup = %+v, %v", r, err)
			}
			for _, cmd := range []envapi.Command{
				cmds.Call("spawn", nil),
				cmds.Execute(json.RawMessage(`"spawn"`), json.RawMessage(`{}`), nil),
			} {
				_, body, r, err := envtest.Post(ctx, nil, srv.URL, token, cmd)
				if err != nil {
					t.Fatal(err)
				}
				if r.Receipt.Type != tc.want {
					t.Fatalf("%s answered %s, want a %s receipt", cmd.Operation.Request.Type, body, tc.want)
				}
			}
			if n := b.Count(envtest.Method(envapi.MethodEnvironments)); n != 2 {
				t.Fatalf("Brain got %d environments calls, want 2 (one each, never repeated)", n)
			}
			if n := b.Count(envtest.Method(envapi.MethodFinish)); n != 0 {
				t.Fatalf("Brain got %d finish calls, want none", n)
			}
		})
	}
}

// The error of such a call matches ErrUnknown; a refusal does not.
func TestAmbiguousCallErrorMatchesUnknown(t *testing.T) {
	for _, tc := range []struct {
		err  *envsdk.CallError
		want bool
	}{
		{&envsdk.CallError{Method: "emit", Status: 500, Code: "ambiguous"}, true},
		{&envsdk.CallError{Method: "emit", Status: 502, Code: "unknown"}, true},
		{&envsdk.CallError{Method: "emit", Status: 409, Code: "ambiguous"}, false},
		{&envsdk.CallError{Method: "emit", Status: 500, Code: "internal"}, false},
	} {
		if got := errors.Is(tc.err, envsdk.ErrUnknown); got != tc.want {
			t.Errorf("errors.Is(%v, ErrUnknown) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
