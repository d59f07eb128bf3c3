package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeListsModels serves GET /v1/models with a providers file: the
// file's provider is listed next to the snapshot's, ?provider= filters,
// and a session pinning the file's provider reaches its base URL.
func TestServeListsModels(t *testing.T) {
	var got []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path+" "+r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"from the gateway"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer fake.Close()
	file := filepath.Join(t.TempDir(), "providers.json")
	os.WriteFile(file, []byte(`{"providers":[{"name":"gateway","dialect":"openai_chat_completions","base_url":"`+fake.URL+`/v1",
	  "models":[{"id":"llama-local","context_window_tokens":8192}]}]}`), 0o600)
	base := startServe(t, "--no-workspace", "--providers-file", file)

	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/v1/models")
	var list struct {
		SnapshotDigest string `json:"snapshot_digest"`
		Providers      []struct {
			ID      string `json:"id"`
			Dialect string `json:"dialect"`
			Models  []struct {
				ID string `json:"id"`
			} `json:"models"`
		} `json:"providers"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || list.SnapshotDigest == "" {
		t.Fatalf("GET /v1/models = %d %s", code, body)
	}
	dialect := map[string]string{}
	for _, p := range list.Providers {
		dialect[p.ID] = p.Dialect
	}
	if dialect["openai"] != "openai_responses" || dialect["anthropic"] != "anthropic_messages" || dialect["gateway"] != "openai_chat_completions" {
		t.Errorf("providers %v", dialect)
	}
	if code, body := get("/v1/models?provider=anthropic"); code != 200 || strings.Contains(body, `"openai"`) || !strings.Contains(body, `"anthropic"`) {
		t.Errorf("?provider=anthropic = %d %s", code, body)
	}
	if code, body := get("/v1/models?provider=nobody"); code != 404 || !strings.Contains(body, `"not_found"`) {
		t.Errorf("?provider=nobody = %d %s", code, body)
	}

	post := func(path, key, body string) string {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s = %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	var sum struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal([]byte(post("/v1/sessions", "c", `{"model":{"provider":"gateway","name":"llama-local","api_key":"sk-gw"}}`)), &sum)
	post("/v1/sessions/"+sum.SessionID+"/messages", "m", `{"input":{"message":"hi"}}`)
	if _, tr := get("/v1/sessions/" + sum.SessionID + "/transcript"); !strings.Contains(tr, "from the gateway") {
		t.Errorf("transcript %s, want the gateway's answer", tr)
	}
	if len(got) != 1 || got[0] != "/v1/chat/completions Bearer sk-gw" {
		t.Errorf("gateway received %q", got)
	}
}

// TestServeRefusesBadProvidersFile: a malformed providers file stops the
// server at start instead of being ignored.
func TestServeRefusesBadProvidersFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "providers.json")
	os.WriteFile(file, []byte(`{"providers":[{"name":"x","dialect":"smoke","base_url":"http://h"}]}`), 0o600)
	var out, errb strings.Builder
	code := serve(t.Context(), []string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "d"), "--no-auth", "--no-workspace", "--providers-file", file}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "dialect") {
		t.Errorf("serve = %d, stderr %q", code, errb.String())
	}
}

// TestServeMetricsListen serves /metrics on its own loopback address
// without the token, and refuses a non-loopback one.
func TestServeMetricsListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := startServe(t, "--no-workspace", "--metrics-listen", addr)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "brain_journal_fsync_seconds") {
		t.Errorf("GET %s/metrics = %d %.200s", addr, resp.StatusCode, b)
	}
	// Only GET /metrics is served there: another path is not found and
	// another method not allowed, as the help says.
	if resp, err := http.Get("http://" + addr + "/other"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET %s/other = %v %v, want 404", addr, resp, err)
	}
	if resp, err := http.Post("http://"+addr+"/metrics", "text/plain", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s/metrics = %v %v, want 405", addr, resp, err)
	}
	if resp, err := http.Get(base + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics on the API = %v %v, want 404 when it has its own address", resp.StatusCode, err)
	}
	// A page of another site whose name now resolves to the loopback
	// address (DNS rebinding) names its own host: it reads nothing.
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Host = "rebound.example:" + strings.Split(addr, ":")[1]
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(b), "brain_") {
			t.Errorf("GET /metrics naming host %s = %d %.200s, want 403", req.Host, resp.StatusCode, b)
		}
	}

	var out, errb strings.Builder
	code := serve(t.Context(), []string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "d"), "--no-auth", "--no-workspace", "--metrics-listen", "0.0.0.0:0"}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "loopback") {
		t.Errorf("non-loopback metrics address: serve = %d, stderr %q", code, errb.String())
	}
}
