package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// Environment variables of the child mode: the test binary, re-executed
// with childDir set, runs only a Brain server and prints its URL.
const (
	childDir  = "BRAIN_E2E_CHILD_DIR"
	readyLine = "BRAIN-READY "
)

// runChild serves Brain on dir until killed.
func runChild(dir string) int {
	b, err := startInProcess(dir, brain.Limits{}, io.Discard)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	fmt.Printf("%s%s\n", readyLine, b.URL)
	select {}
}

// operatorToken is the server token of every test Brain.
const operatorToken = "operator-token-e2e"

// brainServer is one Brain embedded in-process (braintest.Open) and
// served on loopback, with its logs.
type brainServer struct {
	*braintest.Brain
	Dir  string
	srv  *brain.Server
	logs *braintest.Buffer
}

func startInProcess(dir string, limits brain.Limits, logTo io.Writer) (*brainServer, error) {
	return startWith(dir, limits, logTo, nil)
}

// startWith starts a Brain whose configuration edit may adjust.
func startWith(dir string, limits brain.Limits, logTo io.Writer, edit func(*brain.Config)) (*brainServer, error) {
	logs := &braintest.Buffer{}
	var w io.Writer = logs
	if logTo != nil {
		w = io.MultiWriter(logs, logTo)
	}
	b, err := braintest.Open(braintest.Options{DataDir: dir, Token: operatorToken, Logs: w, Edit: func(c *brain.Config) {
		c.Limits = limits
		if edit != nil {
			edit(c)
		}
	}})
	if err != nil {
		return nil, err
	}
	return &brainServer{Brain: b, Dir: dir, srv: b.Server, logs: logs}, nil
}

// newBrain starts a Brain on a fresh data directory, closed with the test.
func newBrain(t *testing.T, limits brain.Limits) *brainServer {
	t.Helper()
	return openBrain(t, t.TempDir(), limits)
}

func openBrain(t *testing.T, dir string, limits brain.Limits) *brainServer {
	t.Helper()
	b, err := startInProcess(dir, limits, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	return b
}

// close drains Brain while its routes still serve provider callbacks,
// then stops serving.
func (b *brainServer) close() { b.Stop() }

// child is a Brain running in a child process.
type child struct {
	URL string
	cmd *exec.Cmd
}

// startChild runs Brain on dir in a re-executed test binary.
func startChild(t *testing.T, dir string) *child {
	t.Helper()
	return reexec(t, childDir+"="+dir, "child Brain")
}

// reexec runs this test binary again with env set, and answers once the
// child prints its ready line; what names the child in a failure.
func reexec(t *testing.T, env, what string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd}
	t.Cleanup(func() { c.kill() })
	lines := bufio.NewScanner(out)
	ready := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if u, ok := strings.CutPrefix(lines.Text(), readyLine); ok {
				ready <- u
			}
		}
	}()
	select {
	case c.URL = <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal(what + " did not become ready")
	}
	return c
}

// kill SIGKILLs the child and reaps it.
func (c *child) kill() {
	if c.cmd.Process == nil || c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
}

// client drives a Brain's session API.
type apiClient struct {
	t   *testing.T
	url string
	hc  *http.Client   // raw requests, for checks of the wire
	api *client.Client // everything else
}

func newClient(t *testing.T, url string) *apiClient {
	hc := &http.Client{Timeout: 60 * time.Second, Transport: httpClient.Transport}
	api, err := client.New(url, &client.Options{Token: operatorToken, HTTPClient: &http.Client{Transport: httpClient.Transport}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	watchAPI(t, url)
	return &apiClient{t: t, url: url, hc: hc, api: api}
}

// do sends a request with the operator token (and a fresh
// Idempotency-Key for POST and DELETE unless headers give one) and
// answers the status and body.
func (c *apiClient) do(method, path string, body any, headers map[string]string) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, ok := body.([]byte)
		if !ok {
			var err error
			if raw, err = json.Marshal(body); err != nil {
				c.t.Fatal(err)
			}
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == http.MethodPost || method == http.MethodDelete {
		req.Header.Set("Idempotency-Key", key())
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// must sends a request and requires status want, decoding the answer
// into out when given.
func (c *apiClient) must(want int, method, path string, body any, out any) []byte {
	c.t.Helper()
	status, b := c.do(method, path, body, nil)
	if status != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return b
}

func (c *apiClient) create(req api.CreateSessionRequest) api.SessionSummary {
	c.t.Helper()
	if req.Model.Provider == "" {
		req.Model = api.ModelConfig{Provider: "scripted", Name: "e2e", APIKey: modelKey}
	}
	if req.Tools == nil {
		req.Tools = []api.Tool{}
	}
	sess, err := c.api.Sessions.Create(context.Background(), req)
	if err != nil {
		c.t.Fatalf("create: %v", err)
	}
	return sess.Summary
}

// send posts a message synchronously and answers status and body.
func (c *apiClient) send(id, message string) (int, []byte) {
	c.t.Helper()
	return c.do(http.MethodPost, "/v1/sessions/"+id+"/messages", api.MessageRequest{Input: api.UserInput{Message: message}}, nil)
}

// submit posts a message asynchronously and answers turn_started.
func (c *apiClient) submit(id, message string) uint64 {
	c.t.Helper()
	r, err := c.api.Sessions.Open(id).Submit(context.Background(), api.UserInput{Message: message})
	if err != nil {
		c.t.Fatalf("async submit: %v", err)
	}
	return r.Sequence
}

// events answers every public event of a session, read through the Go
// client.
func (c *apiClient) events(id string) []api.Event {
	c.t.Helper()
	return sessionEvents(c.t, c.api, id)
}

// waitEvent polls the events until one satisfies match and answers it.
func (c *apiClient) waitEvent(id string, match func(api.Event) bool) api.Event {
	c.t.Helper()
	return pollEvent(c.t, func() []api.Event { return c.events(id) }, match)
}

func ofType(kind string) func(api.Event) bool {
	return func(ev api.Event) bool { return ev.EventType == kind }
}

// withData matches an event of kind whose data has field == want.
func withData(kind, field string, want any) func(api.Event) bool {
	return func(ev api.Event) bool {
		if ev.EventType != kind {
			return false
		}
		var m map[string]any
		if json.Unmarshal(ev.Data, &m) != nil {
			return false
		}
		got, _ := json.Marshal(m[field])
		w, _ := json.Marshal(want)
		return string(got) == string(w)
	}
}

func kindsLine(evs []api.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%d:%s ", ev.Sequence, ev.EventType)
	}
	return b.String()
}

// toolCalls scripts one model answer calling the named tools with input.
func toolCalls(names ...string) string {
	calls := make([]map[string]any, len(names))
	for i, n := range names {
		calls[i] = map[string]any{"name": n, "input": map[string]any{"n": i}}
	}
	return script(map[string]any{"tool_calls": calls, "reply": "done"})
}
