package envtest_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// Post takes a provider's answer as Brain's delivery takes it: a 200
// answer Brain records as an invalid receipt (larger than Brain's
// response bound, naming another sequence, a receipt the request does
// not take, an identifier that quotes the credential or a token the
// command carried) is an error wrapping ErrInvalidResponse, and every
// answer Brain takes is decoded.
func TestPostRefusesWhatBrainRefuses(t *testing.T) {
	const credential = "provider_credential_0123456789"
	var answer atomic.Value // func(cmd envapi.Command) []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(data)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write(answer.Load().(func(envapi.Command) []byte)(cmd))
	}))
	defer srv.Close()
	respond := func(seq func(envapi.Command) uint64, rc envapi.Receipt) func(envapi.Command) []byte {
		return func(cmd envapi.Command) []byte {
			data, _ := json.Marshal(envapi.NewResponse(seq(cmd), rc))
			return data
		}
	}
	same := func(cmd envapi.Command) uint64 { return cmd.Operation.Sequence }
	other := func(cmd envapi.Command) uint64 { return cmd.Operation.Sequence + 1 }
	callbackToken := func(cmd envapi.Command) []byte {
		data, _ := json.Marshal(envapi.NewResponse(cmd.Operation.Sequence,
			envapi.Failure(cmd.Operation.Request.Callback.Token, "echoed", false, nil)))
		return data
	}
	huge := func(cmd envapi.Command) []byte {
		out, _ := json.Marshal(strings.Repeat("x", envapi.MaxResponseBytes))
		data, _ := json.Marshal(envapi.NewResponse(cmd.Operation.Sequence, envapi.Result(out)))
		return data
	}
	b := envtest.NewBrain(t)
	c := envtest.NewCommands("s1", "ws")
	c.Brain = b
	for _, tc := range []struct {
		name   string
		cmd    func() envapi.Command
		answer func(envapi.Command) []byte
		valid  bool
	}{
		{"setup accepted", func() envapi.Command { return c.Setup(nil) }, respond(same, envapi.Accepted()), true},
		{"execute result", func() envapi.Command { return c.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil) }, respond(same, envapi.Result(json.RawMessage(`1`))), true},
		{"execute progress", func() envapi.Command { return c.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil) }, respond(same, envapi.Progress(json.RawMessage(`1`))), true},
		{"call returned", func() envapi.Command { return c.Call("inspect", nil) }, respond(same, envapi.Returned(nil)), true},
		{"teardown failure", func() envapi.Command { return c.Teardown() }, respond(same, envapi.Failure("busy", "m", true, nil)), true},
		{"execute answered for another sequence", func() envapi.Command { return c.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil) }, respond(other, envapi.Result(json.RawMessage(`1`))), false},
		{"setup answered result", func() envapi.Command { return c.Setup(nil) }, respond(same, envapi.Result(json.RawMessage(`1`))), false},
		{"detach answered progress", func() envapi.Command { return c.Detach() }, respond(same, envapi.Progress(json.RawMessage(`1`))), false},
		{"cancel answered returned", func() envapi.Command { return c.Cancel(2) }, respond(same, envapi.Returned(nil)), false},
		{"failure code quoting the credential", func() envapi.Command { return c.Teardown() }, respond(same, envapi.Failure(credential, "m", false, nil)), false},
		{"failure code quoting the callback token", func() envapi.Command { return c.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil) }, callbackToken, false},
		{"answer past Brain's bound", func() envapi.Command { return c.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil) }, huge, false},
	} {
		answer.Store(tc.answer)
		cmd := tc.cmd()
		status, _, resp, err := envtest.Post(t.Context(), srv.Client(), srv.URL, credential, cmd)
		var got envapi.ReceiptType
		if resp != nil {
			got = resp.Receipt.Type
		}
		switch {
		case status != http.StatusOK:
			t.Errorf("%s: status %d", tc.name, status)
		case tc.valid && (err != nil || resp == nil):
			t.Errorf("%s: receipt %q, %v; want the answer Brain takes", tc.name, got, err)
		case !tc.valid && (resp != nil || !errors.Is(err, envtest.ErrInvalidResponse)):
			t.Errorf("%s: receipt %q, %v; want ErrInvalidResponse as Brain refuses it", tc.name, got, err)
		}
	}
}
