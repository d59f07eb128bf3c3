package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/brain-in-go/brain/brain/agentloop/builtin"
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
	base := startServe(t, "--no-workspace", "--openai-base-url", fake.URL+"/v1")

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

// startServe runs "brain serve" in-process on a free loopback port without
// authentication and returns its URL; the server stops with the test.
func startServe(t *testing.T, extra ...string) string {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWriter{lines: make(chan string, 64)}
	done := make(chan int, 1)
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--no-auth", "--log-level", "error"}, extra...)
	go func() { done <- run(ctx, args, out, io.Discard) }()
	var base string
	// Generous: under the race detector compiling the built-in Wasm loop
	// alone takes minutes on a loaded machine.
	timeout := time.After(5 * time.Minute)
	for base == "" {
		select {
		case line := <-out.lines:
			base, _ = strings.CutPrefix(line, "Brain is serving on ")
		case code := <-done:
			cancel()
			t.Fatalf("serve exited with %d before serving", code)
		case <-timeout:
			cancel()
			t.Fatal("serve did not start")
		}
	}
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited with %d after its context ended", code)
		}
	})
	return base
}

// request sends one request to the server and answers its status and body.
func request(t *testing.T, method, url, contentType, key string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// TestServeRunsWasmAgentloops admits a Wasm agentloop through the served
// API and runs a turn with it, and runs the built-in loop as Wasm.
func TestServeRunsWasmAgentloops(t *testing.T) {
	base := startServe(t, "--no-workspace", "--builtin-wasm")

	if status, body := request(t, "POST", base+"/v1/agentloops", "application/octet-stream", "empty", nil); status != http.StatusBadRequest {
		t.Errorf("admitting an empty module = %d %s, want 400", status, body)
	}
	module := builtin.DefaultWasm()
	status, body := request(t, "POST", base+"/v1/agentloops", "application/octet-stream", "admit", module)
	var adm struct{ ID, Status string }
	if json.Unmarshal(body, &adm); status != http.StatusOK || adm.Status != "admitted" {
		t.Fatalf("admission = %d %s, want admitted", status, body)
	}
	sum := sha256.Sum256(module)
	if adm.ID != hex.EncodeToString(sum[:]) {
		t.Errorf("admitted id %s, want the SHA-256 of the module", adm.ID)
	}
	if status, body := request(t, "GET", base+"/v1/agentloops/"+adm.ID, "", "", nil); status != http.StatusOK || !strings.Contains(string(body), `"admitted"`) {
		t.Errorf("GET admission = %d %s", status, body)
	}

	for _, loop := range []string{
		`{"implementation":{"type":"brain_component","entrypoint":"turn","id":"` + adm.ID + `"},"configuration":{},"environment":"brain"}`,
		`{"implementation":{"type":"brain_builtin","name":"default"}}`,
	} {
		create := `{"model":{"provider":"scripted","name":"m"},"agentloop":` + loop + `}`
		status, body := request(t, "POST", base+"/v1/sessions", "application/json", "c-"+loop, []byte(create))
		var sum struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(body, &sum); status != http.StatusOK {
			t.Fatalf("create with %s = %d %s", loop, status, body)
		}
		if status, body := request(t, "POST", base+"/v1/sessions/"+sum.SessionID+"/messages", "application/json", "m-"+loop, []byte(`{"input":{"message":"wasm"}}`)); status != http.StatusOK {
			t.Fatalf("send with %s = %d %s", loop, status, body)
		}
		_, tr := request(t, "GET", base+"/v1/sessions/"+sum.SessionID+"/transcript", "", "", nil)
		if !strings.Contains(string(tr), "echo: wasm") {
			t.Errorf("transcript with %s = %s, want the scripted echo saved by the loop", loop, tr)
		}
	}
}

// TestServeRefusesWhiteSpaceToken: a token of only white space would let
// any client that sends one through, so serve does not start with it.
func TestServeRefusesWhiteSpaceToken(t *testing.T) {
	for _, tok := range []string{" ", "\t \n"} {
		t.Setenv("BRAIN_API_TOKEN", tok)
		var stderr bytes.Buffer
		out := &lineWriter{lines: make(chan string, 64)}
		code := run(t.Context(), []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data")}, out, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), "white space") {
			t.Errorf("token %q: exit %d, stderr %q", tok, code, stderr.String())
		}
	}
}

// writeCounter records each write made to it.
type writeCounter struct{ writes []string }

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// TestBannerOneWrite: the start banner reaches its writer in one write, so
// that a log line written to the same terminal while it is printed comes
// before or after it, never inside the example commands.
func TestBannerOneWrite(t *testing.T) {
	for _, generated := range []bool{true, false} {
		var w writeCounter
		printBanner(&w, "http://127.0.0.1:9", &serveFlags{dataDir: "d"}, "brain_tok", generated, "d/operator.token")
		if len(w.writes) != 1 {
			t.Fatalf("generated=%v: banner in %d writes, want 1", generated, len(w.writes))
		}
		b := w.writes[0]
		export := "export BRAIN_TOKEN=$(cat d/operator.token)"
		if generated {
			export = "export BRAIN_TOKEN=brain_tok"
		}
		for _, want := range []string{"Brain is serving on http://127.0.0.1:9\n", "Try it:", export, "http://127.0.0.1:9/v1/sessions/$SID/transcript\n"} {
			if !strings.Contains(b, want) {
				t.Fatalf("generated=%v: banner lacks %q:\n%s", generated, want, b)
			}
		}
	}
}

// TestServeRefusesAddressWithoutPort: a listen address that is not
// host:port (a bare port, say) is refused naming the setting and what is
// wrong, rather than as a non-loopback address wanting a token.
func TestServeRefusesAddressWithoutPort(t *testing.T) {
	for _, args := range [][]string{{"--listen", "8080"}, {"--metrics-listen", "9090", "--listen", "127.0.0.1:0"}} {
		var stdout, stderr bytes.Buffer
		args = append(args, "--data-dir", filepath.Join(t.TempDir(), "data"), "--no-workspace")
		code := serve(t.Context(), args, &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), args[0]) || !strings.Contains(stderr.String(), "missing port") ||
			strings.Contains(stderr.String(), "non-loopback") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}
