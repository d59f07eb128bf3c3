package loophost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/httpapi"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// apiServer serves the session API with the admission routes mounted.
func apiServer(t *testing.T, h *loophost.Host) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	store, err := journal.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	eng, err := session.New(session.Config{Store: store, Loops: h.Resolve})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	reqs, err := idem.Open(filepath.Join(dir, "requests", "requests.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reqs.Close() })
	s, err := httpapi.New(httpapi.Options{Engine: eng, Requests: reqs, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Mount(s); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, srv *httptest.Server, method, path, key, contentType string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdmissionRoutes(t *testing.T) {
	h := openHost(t, loophost.Options{MaxModuleBytes: 8 << 20})
	srv := apiServer(t, h)
	const oct = "application/octet-stream"

	if code, body := do(t, srv, "POST", "/v1/agentloops", "k0", oct, nil); code != 400 || !strings.Contains(body, "invalid_request") {
		t.Fatalf("empty body: %d %s", code, body)
	}
	if code, body := do(t, srv, "POST", "/v1/agentloops", "", oct, guest); code != 400 || !strings.Contains(body, "idempotency-key") {
		t.Fatalf("no key: %d %s", code, body)
	}
	if code, body := do(t, srv, "POST", "/v1/agentloops", "k1", "application/json", guest); code != 415 {
		t.Fatalf("json body: %d %s", code, body)
	}
	if code, body := do(t, srv, "POST", "/v1/agentloops", "k1", oct, make([]byte, 9<<20)); code != 413 {
		t.Fatalf("oversize: %d %s", code, body)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/v1/agentloops", bytes.NewReader(guest))
	if resp, err := srv.Client().Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("no token: %v %v", resp.StatusCode, err)
	}

	code, body := do(t, srv, "POST", "/v1/agentloops", "k1", oct, guest)
	var a loophost.Admission
	if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil || a.Status != loophost.StatusAdmitted || len(a.ID) != 64 || a.Error != nil {
		t.Fatalf("admit: %d %s", code, body)
	}
	compiles := h.Compiles()
	if code, again := do(t, srv, "POST", "/v1/agentloops", "k1", oct, guest); code != 200 || again != body {
		t.Fatalf("replay: %d %s", code, again)
	}
	if code, other := do(t, srv, "POST", "/v1/agentloops", "k1", oct, commandModule); code != 409 {
		t.Fatalf("same key, other body: %d %s", code, other)
	}
	if h.Compiles() != compiles {
		t.Fatal("a replay compiled")
	}
	if code, got := do(t, srv, "GET", "/v1/agentloops/"+a.ID, "", "", nil); code != 200 || got != body {
		t.Fatalf("get: %d %s, want %s", code, got, body)
	}

	code, body = do(t, srv, "POST", "/v1/agentloops", "k2", "", []byte("junk"))
	if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil || a.Status != loophost.StatusRejected || a.Error == nil || a.Error.Code != "invalid_request" {
		t.Fatalf("junk: %d %s", code, body)
	}
	if code, got := do(t, srv, "GET", "/v1/agentloops/"+a.ID, "", "", nil); code != 200 || got != body {
		t.Fatalf("get rejected: %d %s", code, got)
	}
	if code, _ := do(t, srv, "GET", "/v1/agentloops/"+strings.Repeat("0", 64), "", "", nil); code != 404 {
		t.Fatalf("unknown id: %d", code)
	}
	if code, _ := do(t, srv, "GET", "/v1/agentloops/xyz", "", "", nil); code != 400 {
		t.Fatalf("bad id: %d", code)
	}
}
