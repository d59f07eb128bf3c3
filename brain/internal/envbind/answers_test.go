package envbind

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestReceiptKindsPerOperation: setup, detach, teardown and cancel have no
// output; they succeed with accepted and fail with failure or unknown. A
// provider answering one of them with progress, result or returned has
// not said that the operation was done, so the answer is an invalid
// receipt (the engine records the outcome unknown) and never a success.
// Executes and calls take every receipt kind.
func TestReceiptKindsPerOperation(t *testing.T) {
	answers := map[envapi.ReceiptType]envapi.Receipt{
		envapi.ReceiptAccepted: envapi.Accepted(),
		envapi.ReceiptProgress: envapi.Progress(json.RawMessage(`{"step":1}`)),
		envapi.ReceiptResult:   envapi.Result(json.RawMessage(`{"x":1}`)),
		envapi.ReceiptReturned: envapi.Returned(nil),
		envapi.ReceiptFailure:  envapi.Failure("environment_error", "m", false, nil),
		envapi.ReceiptUnknown:  envapi.Unknown("m"),
	}
	var answer atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		if err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence, answer.Load().(envapi.Receipt)))
	}))
	defer srv.Close()
	b := testBinder(t, Config{})
	requests := map[envapi.RequestType]envapi.Request{
		envapi.RequestSetup:    envapi.Setup(nil),
		envapi.RequestDetach:   envapi.Detach(),
		envapi.RequestTeardown: envapi.Teardown(),
		envapi.RequestCancel:   envapi.Cancel(3),
		envapi.RequestCall:     envapi.Call("inspect", json.RawMessage(`{}`)),
		envapi.RequestExecute:  envapi.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil, nil),
	}
	for rt, req := range requests {
		takesOutput := rt == envapi.RequestCall || rt == envapi.RequestExecute
		for kind, rc := range answers {
			answer.Store(rc)
			o := op(srv.URL, 7)
			o.Request = req
			o.Tool = "t"
			got, err := b.Deliver(context.Background(), o)
			valid := takesOutput || kind == envapi.ReceiptAccepted || kind == envapi.ReceiptFailure || kind == envapi.ReceiptUnknown
			switch {
			case valid && (err != nil || got.Type != kind):
				t.Errorf("%s answered %s: receipt %+v, err %v; want the %s receipt", rt, kind, got, err, kind)
			case !valid && !errors.Is(err, session.ErrInvalidReceipt):
				t.Errorf("%s answered %s: receipt %+v, err %v; want an invalid receipt", rt, kind, got, err)
			case !valid && !strings.Contains(err.Error(), string(kind)):
				t.Errorf("%s answered %s: error %q does not name the answer", rt, kind, err)
			}
		}
	}
}

// TestOversizedErrorStatusIsUnreachable: a provider that answers a status
// other than 200 did not answer the operation, whatever the size of its
// body; like any other non-200 answer it is a delivery error (outcome
// unknown, environment_unreachable), not an invalid receipt of a
// provider that answered.
func TestOversizedErrorStatusIsUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"code":"overloaded","message":"` + strings.Repeat("x", 4096) + `"}`))
	}))
	defer srv.Close()
	b := testBinder(t, Config{MaxResponseBytes: 1024})
	_, err := b.Deliver(context.Background(), op(srv.URL, 2))
	if err == nil || errors.Is(err, session.ErrInvalidReceipt) {
		t.Fatalf("HTTP 500 with a large body: %v; want a delivery error that is not an invalid receipt", err)
	}
	if !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("error %q does not name the status", err)
	}
}
