package pythonprovider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestFinishAnswerNotASequence: finish is acknowledged by the committed
// sequence, a positive integer. Any other answer, even with a 2xx status,
// is no acknowledgement: the Tool's outcome may or may not be committed,
// so the execute answers unknown.
func TestFinishAnswerNotASequence(t *testing.T) {
	url := startProvider(t, "provider.py")
	for _, answer := range []string{`{}`, `"ok"`, `0`, `null`} {
		t.Run(answer, func(t *testing.T) {
			var finishes atomic.Int32
			grantSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				finishes.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, answer)
			}))
			defer grantSrv.Close()
			cmds := envtest.NewCommands("s-"+strings.Trim(answer, `{}"`), "box")
			ctx := context.Background()
			if _, _, resp, err := envtest.Post(ctx, nil, url, token, cmds.Setup(nil)); err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
				t.Fatalf("setup: %+v %v", resp, err)
			}
			grant := func(uint64) *envapi.Grant {
				return &envapi.Grant{URL: grantSrv.URL, Token: "tool-token", Methods: []string{envapi.MethodFinish}}
			}
			_, body, resp, err := envtest.Post(ctx, nil, url, token,
				cmds.ExecuteWith(json.RawMessage(`{"name":"echo"}`), json.RawMessage(`{"n":1}`), nil, grant))
			if err != nil || resp.Receipt.Type != envapi.ReceiptUnknown {
				t.Fatalf("execute whose finish answered %s: %s %v, want unknown", answer, body, err)
			}
			if n := finishes.Load(); n != 1 {
				t.Errorf("finish sent %d times, want once", n)
			}
		})
	}
}

// finishCase is an answer of Brain to the finish of an echo result, and
// the receipt the execute answers for it: a failure with code when Brain
// refused the finish (a 4xx answer commits nothing), unknown when the
// finish may have been committed (a 5xx answer, or no answer).
type finishCase struct {
	name   string
	status int // Brain's status; 0 when no answer arrives
	code   string
	// brain arranges Brain's answer and returns the grant the execute
	// carries.
	brain func(b *envtest.Brain, session string, seq uint64) *envapi.Grant
	want  string // the failure code, or "unknown"
}

// answering makes Brain answer every finish with status and an ApiError of
// code.
func answering(status int, code string) func(*envtest.Brain, string, uint64) *envapi.Grant {
	return func(b *envtest.Brain, session string, seq uint64) *envapi.Grant {
		b.Handle(envapi.MethodFinish, func(envtest.Call) (int, any) {
			return status, map[string]any{"code": code, "message": "refused by the test", "retryable": false}
		})
		g := b.ToolGrant(session, seq)
		return &g
	}
}

var finishCases = []finishCase{
	{name: "revoked", status: http.StatusUnauthorized, code: "unauthorized", want: "unauthorized",
		brain: func(b *envtest.Brain, session string, seq uint64) *envapi.Grant {
			g := b.ToolGrant(session, seq)
			b.Revoke(g.Token) // the execution was closed meanwhile
			return &g
		}},
	{name: "not_granted", status: http.StatusForbidden, code: "not_granted", want: "not_granted",
		brain: func(b *envtest.Brain, session string, seq uint64) *envapi.Grant {
			g := b.ExecutionGrant(session, seq, envapi.MethodEmit)
			g.Methods = append(g.Methods, envapi.MethodFinish) // Brain grants no finish
			return &g
		}},
	{name: "conflict", status: http.StatusConflict, code: "conflict", want: "conflict", brain: answering(http.StatusConflict, "conflict")},
	{name: "emit_limit", status: http.StatusConflict, code: "emit_limit", want: "emit_limit", brain: answering(http.StatusConflict, "emit_limit")},
	{name: "invalid_request", status: http.StatusUnprocessableEntity, code: "invalid_request", want: "invalid_request",
		brain: answering(http.StatusUnprocessableEntity, "invalid_request")},
	{name: "bad_request", status: http.StatusBadRequest, code: "invalid_request", want: "invalid_request",
		brain: answering(http.StatusBadRequest, "invalid_request")},
	{name: "code not an identifier", status: http.StatusBadRequest, code: "no such code!", want: "environment_failed",
		brain: answering(http.StatusBadRequest, "no such code!")},
	{name: "ambiguous", status: http.StatusInternalServerError, code: "ambiguous", want: "unknown",
		brain: answering(http.StatusInternalServerError, "ambiguous")},
	{name: "unavailable", status: http.StatusServiceUnavailable, want: "unknown",
		brain: func(b *envtest.Brain, session string, seq uint64) *envapi.Grant {
			b.Inject(envapi.MethodFinish, envtest.Fault{Kind: envtest.ServerError})
			g := b.ToolGrant(session, seq)
			return &g
		}},
	{name: "lost", want: "unknown",
		brain: func(b *envtest.Brain, session string, seq uint64) *envapi.Grant {
			b.Inject(envapi.MethodFinish, envtest.Fault{Kind: envtest.LoseAck})
			g := b.ToolGrant(session, seq)
			return &g
		}},
}

// TestFinishRefused: a finish Brain refused (a 4xx answer) committed
// nothing, so the execute answers a failure with Brain's code
// (environment_failed when that is no identifier) and Brain's status, code
// and message in details, as envsdk does; a 5xx answer or none leaves the
// outcome unknown. Either way the finish is sent once.
func TestFinishRefused(t *testing.T) {
	url := startProvider(t, "provider.py")
	for i, tc := range finishCases {
		t.Run(tc.name, func(t *testing.T) {
			b := envtest.NewBrain(t)
			cmds := envtest.NewCommands(fmt.Sprintf("refused-%d", i), "box")
			ctx := context.Background()
			if _, _, resp, err := envtest.Post(ctx, nil, url, token, cmds.Setup(nil)); err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
				t.Fatalf("setup: %+v %v", resp, err)
			}
			seq := cmds.Reserve()
			cmd := cmds.At(seq, envapi.Execute(json.RawMessage(`{"name":"echo"}`), json.RawMessage(`{"n":1}`), nil, tc.brain(b, cmds.Session, seq)))
			_, body, resp, err := envtest.Post(ctx, nil, url, token, cmd)
			if err != nil {
				t.Fatalf("execute: %s %v", body, err)
			}
			r := resp.Receipt
			if n := len(b.CallsFor(cmds.Session, seq)); n != 1 {
				t.Errorf("finish sent %d times, want once", n)
			}
			if tc.want == "unknown" {
				if r.Type != envapi.ReceiptUnknown {
					t.Fatalf("execute whose finish answered %d %s answered %s, want unknown", tc.status, tc.code, body)
				}
				return
			}
			if r.Type != envapi.ReceiptFailure || r.Code != tc.want {
				t.Fatalf("execute whose finish was refused %d %s answered %s, want the failure %s", tc.status, tc.code, body, tc.want)
			}
			var details struct {
				Status  int    `json:"status"`
				Code    string `json:"code"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(r.Details, &details); err != nil || details.Status != tc.status || details.Code != tc.code || details.Message == "" {
				t.Errorf("details = %s, want Brain's status %d, code %q and message", r.Details, tc.status, tc.code)
			}
		})
	}
}

// TestFinishAnswerUnreadable: a 2xx answer to finish that cannot be read
// whole (cut short by a closed connection, or nested too deep to decode)
// is no acknowledgement either: the execute answers unknown, not a
// failure of the provider, and the finish is sent once.
func TestFinishAnswerUnreadable(t *testing.T) {
	url := startProvider(t, "provider.py")
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"cut short", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, "1")
		}},
		{"nested too deep", func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var finishes atomic.Int32
			grantSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				finishes.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				tc.answer(w)
			}))
			defer grantSrv.Close()
			cmds := envtest.NewCommands("s-"+strings.ReplaceAll(tc.name, " ", "-"), "box")
			ctx := context.Background()
			if _, _, resp, err := envtest.Post(ctx, nil, url, token, cmds.Setup(nil)); err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
				t.Fatalf("setup: %+v %v", resp, err)
			}
			grant := func(uint64) *envapi.Grant {
				return &envapi.Grant{URL: grantSrv.URL, Token: "tool-token", Methods: []string{envapi.MethodFinish}}
			}
			_, body, resp, err := envtest.Post(ctx, nil, url, token,
				cmds.ExecuteWith(json.RawMessage(`{"name":"echo"}`), json.RawMessage(`{"n":1}`), nil, grant))
			if err != nil || resp.Receipt.Type != envapi.ReceiptUnknown {
				t.Fatalf("execute whose finish answer was %s: %s %v, want unknown", tc.name, body, err)
			}
			if n := finishes.Load(); n != 1 {
				t.Errorf("finish sent %d times, want once", n)
			}
		})
	}
}
