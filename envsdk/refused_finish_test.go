package envsdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// apiError is the body of Brain's refusals.
type apiError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// refusals are the answers of Brain that commit nothing: a 4xx status
// with an ApiError.
var refusals = []struct {
	status int
	code   string
}{
	{http.StatusUnauthorized, "unauthorized"},
	{http.StatusNotFound, "not_found"},
	{http.StatusConflict, "conflict"},
	{http.StatusUnprocessableEntity, "invalid_request"},
}

// refusingFinish is a fake Brain whose finish service answers status with
// an ApiError of code, committing nothing.
func refusingFinish(t *testing.T, status int, code string) *envtest.Brain {
	b := envtest.NewBrain(t)
	b.Handle(envapi.MethodFinish, func(envtest.Call) (int, any) {
		return status, apiError{Code: code, Message: "refused by the test"}
	})
	return b
}

// TestRefusedFinishIsNotUnknown: when Brain refuses the automatic finish
// of a result (a 4xx answer), nothing was committed: the execute answers
// a failure carrying Brain's code, not unknown, and the finish is sent
// once. A server error leaves the outcome unknown.
func TestRefusedFinishIsNotUnknown(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.code, func(t *testing.T) {
			b := refusingFinish(t, tc.status, tc.code)
			g := b.ToolGrant("ses_1", 1)
			srv := serve(t, newTestProvider(), nil)
			r := send(t, srv, execute(1, "echo", nil, &g)).Receipt
			if r.Type != envapi.ReceiptFailure || r.Code != tc.code {
				t.Fatalf("execute whose finish was refused %d %s answered %+v, want the failure %s", tc.status, tc.code, r, tc.code)
			}
			var details struct {
				Status int    `json:"status"`
				Code   string `json:"code"`
			}
			if err := json.Unmarshal(r.Details, &details); err != nil || details.Status != tc.status || details.Code != tc.code {
				t.Errorf("details = %s, want Brain's status %d and code %s", r.Details, tc.status, tc.code)
			}
			if n := len(b.CallsFor("ses_1", 1)); n != 1 {
				t.Errorf("%d calls sent, want the one finish", n)
			}
		})
	}
	t.Run("server error", func(t *testing.T) {
		b := refusingFinish(t, http.StatusInternalServerError, "ambiguous")
		g := b.ToolGrant("ses_1", 1)
		srv := serve(t, newTestProvider(), nil)
		if r := send(t, srv, execute(1, "echo", nil, &g)).Receipt; r.Type != envapi.ReceiptUnknown {
			t.Fatalf("execute whose finish answered 500 answered %+v, want unknown", r)
		}
		if n := len(b.CallsFor("ses_1", 1)); n != 1 {
			t.Errorf("%d calls sent, want the one finish", n)
		}
	})
}

// TestLaterFinishRefusedIsTyped: a Finish that Brain refuses returns a
// *CallError with Brain's status and code, matching ErrRefused and not
// ErrAckLost; it is not sent again.
func TestLaterFinishRefusedIsTyped(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.code, func(t *testing.T) {
			b := refusingFinish(t, tc.status, tc.code)
			g := b.ToolGrant("ses_1", 1)
			p := newTestProvider()
			srv := serve(t, p, nil)
			ms := int64(10_000)
			if r := send(t, srv, execute(1, "later", &ms, &g)).Receipt; r.Type != envapi.ReceiptReturned {
				t.Fatalf("later answered %+v, want returned", r)
			}
			err := <-p.later
			var ce *envsdk.CallError
			if !errors.As(err, &ce) || ce.Status != tc.status || ce.Code != tc.code {
				t.Fatalf("refused Finish = %v, want a *CallError %d %s", err, tc.status, tc.code)
			}
			if errors.Is(err, envsdk.ErrAckLost) || !errors.Is(err, envsdk.ErrRefused) {
				t.Errorf("refused Finish = %v: ErrAckLost %v, ErrRefused %v; want a refusal, not a lost acknowledgement",
					err, errors.Is(err, envsdk.ErrAckLost), errors.Is(err, envsdk.ErrRefused))
			}
			if n := len(b.CallsFor("ses_1", 1)); n != 1 {
				t.Errorf("%d calls sent, want the one finish", n)
			}
		})
	}
}

// TestFinishRefusedAfterCancelAnswersCancelled: Brain closes a Tool it
// cancels before it sends the cancel, so a finish that reaches it after
// that is refused. When the cancel reaches the provider while its
// automatic finish is on the way, the execute answers cancelled: that is
// what Brain recorded.
func TestFinishRefusedAfterCancelAnswersCancelled(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("ses_1", 1)
	srv := serve(t, newTestProvider(), nil)
	cancelled := make(chan string, 1)
	b.Handle(envapi.MethodFinish, func(envtest.Call) (int, any) {
		// The cancel is answered before the finish is refused.
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/operations", bytes.NewReader(command(2, envapi.Cancel(1))))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancelled <- err.Error()
		} else {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancelled <- string(data)
		}
		return http.StatusUnauthorized, apiError{Code: "unauthorized", Message: "the execution is closed"}
	})
	r := send(t, srv, execute(1, "echo", nil, &g)).Receipt
	if c, err := envapi.DecodeResponse([]byte(<-cancelled)); err != nil || c.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel answered %+v, %v", c, err)
	}
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeCancelled {
		t.Fatalf("execute cancelled while its finish was on the way answered %+v, want the failure cancelled", r)
	}
}

// TestEmissionRefusalIsTyped: a refused emission is a *CallError that
// matches ErrRefused; a server error does not (it may have been
// committed).
func TestEmissionRefusalIsTyped(t *testing.T) {
	ctx := context.Background()
	for _, tc := range refusals {
		inv := refusing(t, tc.status, `{"code":"`+tc.code+`","message":"no","retryable":false}`)
		if _, err := inv.Emit(ctx, "x", nil); !errors.Is(err, envsdk.ErrRefused) {
			t.Errorf("emit refused %d = %v, want ErrRefused", tc.status, err)
		}
		if _, err := inv.Result(ctx, envapi.OK(nil)); !errors.Is(err, envsdk.ErrRefused) {
			t.Errorf("result refused %d = %v, want ErrRefused", tc.status, err)
		}
	}
	inv := refusing(t, http.StatusInternalServerError, `{"code":"ambiguous","message":"lost","retryable":true}`)
	if _, err := inv.Emit(ctx, "x", nil); err == nil || errors.Is(err, envsdk.ErrRefused) {
		t.Errorf("emit answered 500 = %v, want an error that is not ErrRefused", err)
	}
}
