package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineWriter hands each line written to it to a channel.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		s := w.buf.String()
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- s[:i]:
		default:
		}
		w.buf.Reset()
		w.buf.WriteString(s[i+1:])
	}
}

// TestServeUsesConfiguredModel runs "brain serve" in-process against a
// local Chat Completions server and checks that a session's turn reaches it
// with the operator's key and brings its answer into the transcript.
func TestServeUsesConfiguredModel(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	var bodies []map[string]any
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		bodies = append(bodies, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []string{
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello from "},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":{"content":"the local model"},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer fake.Close()

	t.Setenv("OPENAI_API_KEY", "sk-operator-key")
	dataDir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWriter{lines: make(chan string, 64)}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--no-auth",
			"--no-workspace", "--openai-base-url", fake.URL + "/v1", "--log-level", "error"}, out, io.Discard)
	}()
	var base string
	timeout := time.After(30 * time.Second)
	for base == "" {
		select {
		case line := <-out.lines:
			base, _ = strings.CutPrefix(line, "Brain is serving on ")
		case code := <-done:
			t.Fatalf("serve exited with %d before serving", code)
		case <-timeout:
			t.Fatal("serve did not start")
		}
	}
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited with %d after its context ended", code)
		}
	}()

	post := func(path, key, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s = %d %s", path, resp.StatusCode, data)
		}
		return data
	}
	var sum struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(post("/v1/sessions", "c", `{"model":{"provider":"openai_chat","name":"local"}}`), &sum)
	post("/v1/sessions/"+sum.SessionID+"/messages", "m", `{"input":{"message":"hi"}}`)

	resp, err := http.Get(base + "/v1/sessions/" + sum.SessionID + "/transcript")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	sc.Scan()
	if !strings.Contains(sc.Text(), "Hello from the local model") {
		t.Errorf("transcript = %s, want the local model's answer", sc.Text())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 1 || auths[0] != "Bearer sk-operator-key" {
		t.Errorf("model requests carried %q, want one request with the operator's key", auths)
	}
	if len(bodies) == 1 && bodies[0]["model"] != "local" {
		t.Errorf("model request named model %v, want local", bodies[0]["model"])
	}
}
