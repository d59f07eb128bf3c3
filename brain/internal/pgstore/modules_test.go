package pgstore_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// request sends one authenticated request to n and answers its status and
// body.
func request(t *testing.T, n *node, method, path, contentType, key string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, n.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestModuleAdmittedOnOneNodeRunsOnAnother admits a Wasm agentloop on
// node A: node B, which never saw the upload, answers it admitted, runs a
// session's turn with it, and keeps the module in its own data directory
// (compiled into its own cache); an id admitted nowhere stays unknown.
func TestModuleAdmittedOnOneNodeRunsOnAnother(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	a, b := clusterNode(t, dbURL, keyFile, 10), clusterNode(t, dbURL, keyFile, 10)
	module := builtin.DefaultWasm()
	status, body := request(t, a, "POST", "/v1/agentloops", "application/octet-stream", "admit", module)
	var adm struct{ ID, Status string }
	if json.Unmarshal(body, &adm); status != http.StatusOK || adm.Status != "admitted" {
		t.Fatalf("admission on A = %d %s", status, body)
	}
	local := filepath.Join(b.dir, "agentloops", adm.ID+".wasm")
	if _, err := os.Stat(local); err == nil {
		t.Fatal("B holds the module before it was named there")
	}
	if status, body := request(t, b, "GET", "/v1/agentloops/"+adm.ID, "", "", nil); status != http.StatusOK || !strings.Contains(string(body), `"admitted"`) {
		t.Fatalf("admission on B = %d %s, want admitted", status, body)
	}
	if status, _ := request(t, b, "GET", "/v1/agentloops/"+strings.Repeat("0", 64), "", "", nil); status != http.StatusNotFound {
		t.Errorf("an id admitted nowhere = %d on B, want 404", status)
	}
	if got, err := os.ReadFile(local); err != nil || !bytes.Equal(got, module) {
		t.Errorf("B's local copy of the module = %d bytes, %v", len(got), err)
	}
	create := `{"model":{"provider":"scripted","name":"m"},"agentloop":{"implementation":{"type":"brain_component","entrypoint":"turn","id":"` + adm.ID + `"},"configuration":{},"environment":"brain"}}`
	status, body = request(t, b, "POST", "/v1/sessions", "application/json", "create", []byte(create))
	var sum struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(body, &sum); status != http.StatusOK {
		t.Fatalf("create on B with A's module = %d %s", status, body)
	}
	if status, body := request(t, b, "POST", "/v1/sessions/"+sum.SessionID+"/messages", "application/json", "m1", []byte(`{"input":{"message":"wasm"}}`)); status != http.StatusOK {
		t.Fatalf("turn on B = %d %s", status, body)
	}
	if _, tr := request(t, b, "GET", "/v1/sessions/"+sum.SessionID+"/transcript", "", "", nil); !strings.Contains(string(tr), "echo: wasm") {
		t.Errorf("transcript = %s, want the echo saved by A's module running on B", tr)
	}
}
