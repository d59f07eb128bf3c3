package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// failingWrites is a journal store whose appends fail as on a full disk
// while failing is set.
type failingWrites struct {
	journal.Store
	failing atomic.Bool
}

func (f *failingWrites) Append(ctx context.Context, id string, next uint64, recs []journal.Record) error {
	if f.failing.Load() {
		return fmt.Errorf("%w: no space left on device", journal.ErrWrite)
	}
	return f.Store.Append(ctx, id, next, recs)
}

// A provider whose finish of a background tool was answered 503 (the
// journal could not record it) and that sends it again with the same
// invocation token is answered 409 conflict, saying that the finish was
// not recorded and the call is closed: not 401, as a token never issued.
func TestFinishSentAgainAfterStorageFailed(t *testing.T) {
	grants := make(chan *envapi.Grant, 1)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cmd envapi.Command
		if err := json.NewDecoder(r.Body).Decode(&cmd); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		receipt := envapi.Accepted()
		if cmd.Operation.Request.Type == envapi.RequestExecute {
			grants <- cmd.Operation.Request.Callback
			receipt = envapi.Returned(nil)
		}
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence, receipt))
	}))
	defer provider.Close()
	binder := newBinder(t)
	store := &failingWrites{Store: journal.NewMemStore()}
	f := newEngineFixture(t, Options{Bindings: binder}, session.Config{Store: store, Environments: binder}, 0)
	body := `{"model":{"provider":"scripted","name":"m"},"environments":[{"name":"box","driver":"http","url":"` + provider.URL + `"}],` +
		`"tools":[{"name":"echo","description":"echo","input_schema":{"type":"object"},"placements":{"box":{"implementation":{"kind":"returner"}}}}]}`
	st, _, b := f.do("POST", "/v1/sessions", body, "Idempotency-Key", "c")
	if st != http.StatusOK {
		t.Fatalf("create = %d %s", st, b)
	}
	var sum api.SessionSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Status != api.StatusIdle {
		t.Fatalf("created session is %s", sum.Status)
	}
	msg, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: `{"tool_calls":[{"name":"echo"}],"reply":"waiting"}`}})
	if st, _, b := f.do("POST", "/v1/sessions/"+sum.SessionID+"/messages", string(msg), "Idempotency-Key", "m"); st != http.StatusOK {
		t.Fatalf("send = %d %s", st, b)
	}
	g := <-grants
	if g == nil {
		t.Fatal("the execute carried no callback")
	}
	path := strings.TrimPrefix(g.URL, binder.PublicURL())
	finish := func() (int, api.ApiError) {
		t.Helper()
		st, _, b := f.do("POST", path, `{"method":"finish","input":{"status":"ok","value":"done"}}`, "Authorization", "Bearer "+g.Token)
		var e api.ApiError
		_ = json.Unmarshal(b, &e)
		return st, e
	}

	store.failing.Store(true)
	if st, e := finish(); st != http.StatusServiceUnavailable || !e.Retryable {
		t.Fatalf("finish while the journal cannot be written = %d %+v, want 503 retryable", st, e)
	}
	store.failing.Store(false)
	st, e := finish()
	if st != http.StatusConflict || e.Code != api.CodeConflict || !strings.Contains(e.Message, "could not be recorded") {
		t.Fatalf("finish sent again after the 503 = %d %+v, want 409 conflict saying the finish could not be recorded", st, e)
	}
}
