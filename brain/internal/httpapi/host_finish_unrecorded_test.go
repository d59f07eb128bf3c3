package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// A host whose finish of a tool call was answered 503 (the journal could
// not record it) and that posts it again to /results is answered as a
// provider sending a finish again over its callback is: 503 while the
// call's close cannot be written either, then 409 conflict saying the
// finish could not be recorded; not that the host has no such call.
// Nothing of the finishes sent again is recorded.
func TestHostFinishSentAgainAfterStorageFailed(t *testing.T) {
	for _, phase := range []string{"returned", "synchronous"} {
		t.Run(phase, func(t *testing.T) {
			store := &failingWrites{Store: journal.NewMemStore()}
			f := newHostFixtureOn(t, store)
			cmd := f.invoke()
			update := func(u api.ToolExecutionUpdate) (int, api.ApiError) {
				t.Helper()
				b, _ := json.Marshal(api.HostResult{SessionID: cmd.SessionID, Sequence: cmd.Sequence, Update: u})
				st, _, out := f.do("POST", "/v1/hosts/"+f.hostID+"/results", string(b), "Authorization", "Bearer "+f.token)
				var e api.ApiError
				_ = json.Unmarshal(out, &e)
				return st, e
			}
			if phase == "returned" {
				if st, e := update(api.ToolExecutionUpdate{Type: api.UpdateReturned}); st != http.StatusOK {
					t.Fatalf("returned = %d %+v", st, e)
				}
			}
			finish := api.ToolExecutionUpdate{Type: api.UpdateFinish, Outcome: &api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"done"`)}}

			store.failing.Store(true)
			if st, e := update(finish); st != http.StatusServiceUnavailable || !e.Retryable {
				t.Fatalf("finish while the journal cannot be written = %d %+v, want 503 retryable", st, e)
			}
			if st, e := update(finish); st != http.StatusServiceUnavailable || !e.Retryable {
				t.Fatalf("finish sent again while the journal still cannot be written = %d %+v, want 503 retryable", st, e)
			}
			store.failing.Store(false)
			st, e := update(finish)
			if st != http.StatusConflict || e.Code != api.CodeConflict || !strings.Contains(e.Message, "could not be recorded") {
				t.Fatalf("finish sent again after the 503 = %d %+v, want 409 conflict saying the finish could not be recorded", st, e)
			}
			if n := f.kinds(cmd.SessionID); n[api.KindToolCallEnded] != 0 || n[api.KindToolCallFailed] != 1 {
				t.Fatalf("events after the finishes sent again: %v, want the call closed once as failed", n)
			}
		})
	}
}
