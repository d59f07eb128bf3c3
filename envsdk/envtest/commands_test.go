package envtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

func TestCommands(t *testing.T) {
	b := envtest.NewBrain(t)
	c := envtest.NewCommands("s1", "ws")
	c.Brain = b
	setup := c.Setup(json.RawMessage(`{"label":"x"}`))
	exec := c.Execute(json.RawMessage(`"echo"`), json.RawMessage(`1`), envtest.Millis(500))
	call := c.Call("inspect", nil)
	cancel := c.Cancel(exec.Operation.Sequence)
	detach, teardown := c.Detach(), c.Teardown()
	for i, cmd := range []envapi.Command{setup, exec, call, cancel, detach, teardown} {
		op := cmd.Operation
		if op.Sequence != uint64(i+1) || op.SessionID != "s1" || op.Environment != "ws" || cmd.Contract != envapi.Contract {
			t.Errorf("command %d: %+v", i, op)
		}
		if op.Binding == nil || op.Binding.Name != "ws" || op.Binding.Sequence != 1 {
			t.Errorf("command %d binding %+v", i, op.Binding)
		}
		if string(op.Configuration) != `{"label":"x"}` {
			t.Errorf("command %d configuration %s", i, op.Configuration)
		}
		if op.Reporter == nil || !strings.HasSuffix(op.Reporter.URL, "/environments/ws/1/events") {
			t.Errorf("command %d reporter %+v", i, op.Reporter)
		}
		if op.Context == nil || !strings.HasSuffix(op.Context.URL, "/environments/ws/operations/"+strconv.Itoa(i+1)+"/context") {
			t.Errorf("command %d context %+v", i, op.Context)
		}
		// Every command survives the strict decoder.
		data, err := json.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := envapi.DecodeCommand(data); err != nil {
			t.Errorf("command %d does not decode: %v\n%s", i, err, data)
		}
	}
	g := exec.Operation.Request.Callback
	if g == nil || !strings.HasSuffix(g.URL, "/executions/2/call") || !g.Allows("finish") || *exec.Operation.Request.DeadlineMs != 500 {
		t.Errorf("execute grant %+v", g)
	}
	other := c.For("other")
	if cmd := other.Setup(nil); cmd.Operation.Sequence != 7 || cmd.Operation.Environment != "other" || cmd.Operation.SessionID != "s1" {
		t.Errorf("sibling binding command %+v", cmd.Operation)
	}
	if c.Last() != 7 {
		t.Errorf("Last = %d, want 7 (sequences are shared by the session)", c.Last())
	}
	if cancel.Operation.Request.TargetSequence != 2 {
		t.Errorf("cancel target %d", cancel.Operation.Request.TargetSequence)
	}
}

func TestPost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/operations" || r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		data, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(data)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if cmd.Operation.Request.Type == envapi.RequestDetach {
			_, _ = w.Write([]byte(`{"contract":"environment/v1","sequence":1,"receipt":{"type":"nonsense"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence, envapi.Accepted()))
	}))
	defer srv.Close()
	c := envtest.NewCommands("s1", "ws")
	status, body, resp, err := envtest.Post(t.Context(), srv.Client(), srv.URL, "tok", c.Setup(nil))
	if err != nil || status != 200 || resp == nil || resp.Sequence != 1 || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %d %s %+v %v", status, body, resp, err)
	}
	status, _, resp, err = envtest.Post(t.Context(), srv.Client(), srv.URL, "bad", c.Teardown())
	if err != nil || status != 401 || resp != nil {
		t.Errorf("wrong token: %d %+v %v", status, resp, err)
	}
	status, _, _, err = envtest.Post(t.Context(), srv.Client(), srv.URL, "tok", []byte(`{"contract":`))
	if err != nil || status != 400 {
		t.Errorf("raw malformed body: %d %v", status, err)
	}
	status, _, resp, err = envtest.Post(t.Context(), srv.Client(), srv.URL, "tok", c.Detach())
	if err == nil || status != 200 || resp != nil {
		t.Errorf("invalid response body: %d %+v %v", status, resp, err)
	}
}
