package envtest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestRefusedBodiesAnswerAsBrain: a callback body that is not JSON is
// answered 400, an envelope that is not an ExecutionCall 422 and one past
// the bound 413, as Brain answers them; returned, finish and telemetry
// may leave their input out.
func TestRefusedBodiesAnswerAsBrain(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("s1", 7)
	raw := func(body []byte) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, g.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+g.Token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(out)
	}
	status, body := raw([]byte(`{"method":"emit",`))
	want(t, "not JSON", status, body, 400, `"invalid_request"`)
	status, body = raw([]byte(`{"method":"emit","input":{"event_type":"x","data":1},"extra":1}`))
	want(t, "unknown envelope field", status, body, 422, `"invalid_request"`)
	status, body = raw([]byte(`{"method":"emit","input":"` + strings.Repeat("x", 33<<20) + `"}`))
	want(t, "past the bound", status, body, 413, `"invalid_request"`)
	status, body = raw([]byte(`{"method":"telemetry"}`))
	want(t, "telemetry without input", status, body, 200, "null")
	status, body = raw([]byte(`{"method":"returned"}`))
	want(t, "returned without input", status, body, 200, "")
	status, body = raw([]byte(`{"method":"emit"}`))
	want(t, "emit without input", status, body, 422, `"invalid_request"`)
	var n uint64
	if err := json.Unmarshal([]byte(body), &n); err == nil {
		t.Errorf("emit without input committed %d", n)
	}
}
