package main

import (
	"encoding/json"
	"fmt"
	"io"
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
