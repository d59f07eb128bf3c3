package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/braintest"
)

// chromium answers the path of Debian's chromium, skipping the test when it
// is missing unless BRAIN_REQUIRE_BROWSER=1 demands it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("BRAIN_REQUIRE_BROWSER") == "1" {
		t.Fatal("chromium is not installed and BRAIN_REQUIRE_BROWSER=1")
	}
	t.Skip("chromium is not installed (apt-get install chromium); set BRAIN_REQUIRE_BROWSER=1 to fail instead")
	return ""
}

// artifacts answers the directory test artifacts are saved to:
// BRAIN_TEST_ARTIFACTS when set, else a temporary directory.
func artifacts(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("BRAIN_TEST_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

func call(t *testing.T, method, u, token, key, body string) []byte {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s = %d %s", method, u, resp.StatusCode, b.String())
	}
	return b.Bytes()
}

const createWithShell = `{"model":{"provider":"scripted","name":"demo"},
 "environments":[{"name":"ws","driver":"workspace"}],
 "tools":[{"name":"sh","description":"run a shell line","input_schema":{"type":"object","properties":{"shell":{"type":"string"}},"required":["shell"]},
   "placements":{"ws":{"implementation":{"tool":"command"}}}}]}`

// TestInspectorInBrowser drives the inspector in headless Chromium against
// a real Brain: it logs in, opens a session from the list, sends a tool
// turn from the page and checks the timeline (durations, outcomes, origins,
// streamed deltas), the transcript and the environments, then cancels a
// long turn from the page. It saves a screenshot as a test artifact.
func TestInspectorInBrowser(t *testing.T) {
	exe := chromium(t)
	const token = "inspector-test-token"
	brainURL := braintest.Serve(t, t.TempDir(), token, "--no-workspace=false")
	base := brainURL // "brain serve" serves the inspector at /ui/

	var sum struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(call(t, "POST", brainURL+"/v1/sessions", token, "create-1", createWithShell), &sum); err != nil {
		t.Fatal(err)
	}
	id := sum.SessionID

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancelTimeout := context.WithTimeout(ctx, 120*time.Second)
	defer cancelTimeout()

	fail := func(what string, err error) {
		t.Helper()
		page, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
		t.Fatalf("%s: %v\npage:\n%s", what, err, page)
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			fail(what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		// A view re-renders when new data arrives, which can replace the
		// node between its lookup and its read ("No node with given id
		// found"): the selector is then looked up again.
		for deadline := time.Now().Add(10 * time.Second); ; {
			s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
			if err == nil {
				return strings.TrimSpace(s)
			}
			if !strings.Contains(err.Error(), "No node with given id found") || time.Now().After(deadline) {
				fail("read "+sel, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	eval := func(expr string, v any) {
		t.Helper()
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
		if err == nil {
			err = json.Unmarshal(raw, v)
		}
		if err != nil {
			fail("evaluate "+expr, err)
		}
	}
	poll := func(expr string) chromedp.Action[chromedp.Void] {
		return void(chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second)))
	}

	// A wrong token is refused and the login form stays.
	run("open the page", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	run("log in with a wrong token",
		chromedp.SendKeys(chromedp.CSS("#token"), "wrong"),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#login-error")),
		poll(`document.getElementById('login-error').textContent.includes('refused')`))

	// The right token shows the session list.
	row := fmt.Sprintf(`#sessions tr[data-session=%q]`, id)
	run("log in",
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(row)))
	if got := text(row + " .badge"); got != "idle" {
		t.Errorf("session list shows status %q, want idle", got)
	}

	// Open the session and send a tool turn from the page.
	const reply = "the shell said hello"
	script := `{"tool_calls":[{"name":"sh","input":{"shell":"echo hello from the shell"}}],"reply":"` + reply + `","stream":true}`
	run("open the session",
		chromedp.Click(chromedp.CSS(row+" a")),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-kind="session_creation"][data-outcome="ok"]`)),
		poll(`document.getElementById('live').dataset.state === 'following'`))
	run("send a message",
		chromedp.SendKeys(chromedp.CSS("#message"), script),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-kind="turn"][data-outcome="ok"]`)))

	turn := text(`#timeline li[data-kind="turn"] .summary`)
	if !strings.Contains(turn, "echo hello from the shell") || !strings.Contains(turn, reply) {
		t.Errorf("turn row %q, want the message and the result", turn)
	}
	tool := `#timeline li[data-kind="tool_call"]`
	if s := text(tool + " .summary"); !strings.Contains(s, "sh on ws") || !strings.Contains(s, `hello from the shell\n`) {
		t.Errorf("tool call row %q, want the tool, its environment and its output", s)
	}
	if s := text(tool + " .outcome"); s != "ok" {
		t.Errorf("tool call outcome %q, want ok", s)
	}
	if s := text(tool + " .duration"); !strings.HasSuffix(s, " ms") {
		t.Errorf("tool call duration %q, want milliseconds", s)
	}
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(tool), "data-seq"))
	if err != nil {
		fail("tool sequence", err)
	}
	toolSeq := attr.Value
	out := `#timeline li[data-event="workspace.output"]`
	if s := text(out + " .origin"); s != "tool #"+toolSeq {
		t.Errorf("workspace output origin %q, want tool #%s", s, toolSeq)
	}
	if s := text(`#timeline li[data-kind="turn"] .origin`); s != "brain" {
		t.Errorf("turn origin %q, want brain", s)
	}
	var models []string
	eval(`Array.from(document.querySelectorAll('#timeline li[data-kind="model_call"]')).map(e => e.dataset.outcome)`, &models)
	if len(models) != 2 || models[0] != "ok" || models[1] != "ok" {
		t.Errorf("model call outcomes %v, want two ok", models)
	}
	// The final answer streamed: the live deltas were shown under its
	// model call before the committed result arrived.
	var streamed []string
	eval(`Array.from(document.querySelectorAll('#timeline li[data-kind="model_call"]')).map(e => (e.querySelector('pre.stream[data-live]')||{}).textContent||'')`, &streamed)
	if len(streamed) != 2 || streamed[1] != reply {
		t.Errorf("streamed model output per call %q, want %q under the second", streamed, reply)
	}

	// The transcript shows the tool result.
	run("transcript",
		chromedp.Click(chromedp.CSS(`.tabs button[data-tab="transcript"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript .block[data-type="tool_result"]`)))
	// The tab re-renders whenever a transcript event arrives, so its text
	// is awaited, not read once.
	run("transcript tool result", poll(`Array.from(document.querySelectorAll('#transcript .block[data-type="tool_result"] pre')).some(e => e.textContent.includes('hello from the shell'))`))
	lastAssistant := `(document.querySelector('#transcript .message[data-role="assistant"]:last-child pre')||{}).textContent`
	if err := chromedp.Do(ctx, poll(lastAssistant+` === `+strconv.Quote(reply))); err != nil {
		var s string
		eval(lastAssistant+` || ''`, &s)
		t.Errorf("transcript's last assistant message %q, want %q", s, reply)
	}

	// The environments tab shows the workspace binding and its tool call.
	run("environments",
		chromedp.Click(chromedp.CSS(`.tabs button[data-tab="environments"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#environments tr[data-env="ws"]`)))
	envRow := text(`#environments tr[data-env="ws"]`)
	for _, want := range []string{"workspace", "ws #", "ready", "sh"} {
		if !strings.Contains(envRow, want) {
			t.Errorf("environment row %q lacks %q", envRow, want)
		}
	}
	if s := text(`#environments tr[data-env="ws"] .calls`); s != "1" {
		t.Errorf("environment tool calls %q, want 1", s)
	}

	// The token lives in sessionStorage, never in the address.
	href, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		fail("location", err)
	}
	var stored string
	eval(`sessionStorage.getItem('brain.inspector.token')`, &stored)
	if strings.Contains(href, token) || stored != token {
		t.Errorf("location %q, stored token %q", href, stored)
	}

	run("back to the timeline", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="timeline"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		fail("screenshot", err)
	}
	shot := filepath.Join(artifacts(t), "inspector.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	// A long turn sent from the page is cancelled from the page.
	run("send a long turn",
		chromedp.SendKeys(chromedp.CSS("#message"), `{"delay_ms":60000}`),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-kind="model_call"][data-outcome="running"]`)),
		poll(`document.getElementById('status').textContent === 'running'`),
		chromedp.Click(chromedp.CSS("#cancel")),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-kind="turn"][data-outcome="failed"]`)))
	if s := text(`#timeline li[data-kind="turn"][data-outcome="failed"] .outcome`); s != "failed: cancelled" {
		t.Errorf("cancelled turn outcome %q, want failed: cancelled", s)
	}
	run("status back to idle", poll(`document.getElementById('status').textContent === 'idle'`))
}

// void drops the value of an action so that it runs among other steps.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}
