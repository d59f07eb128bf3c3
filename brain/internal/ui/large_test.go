package ui_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/braintest"
)

// largeOpenBound bounds how long the inspector may take to show the newest
// events of a session of 20,000 events. Rendering every event took 4.6 to
// 8.8 s on a two-core machine (with -race); the newest page alone takes
// about 0.4 s.
const largeOpenBound = 2 * time.Second

// maxRenderedEvents bounds the events the page holds in its DOM at once.
const maxRenderedEvents = 1000

// TestInspectorLargeSession opens a session of 20,000 events: the page
// shows the newest events quickly, holds a bounded number of them, pages
// to the oldest and back through its controls, and follows new events
// once back at the newest.
func TestInspectorLargeSession(t *testing.T) {
	b := newBrowser(t, 180*time.Second)
	const token = "large-session-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	last := srv.emit(t, id, 20000)
	if last < 20000 {
		t.Fatalf("the session has %d events, want at least 20000", last)
	}

	// The newest timeline row is the last extension event (the records
	// after it close rows opened before).
	lastEmitted := srv.lastOf(t, id, "progress")
	b.login(srv.url, token)
	newest := fmt.Sprintf(`document.querySelector('#timeline li[data-seq="%d"]') !== null && document.querySelector('#events tr[data-seq="%d"]') !== null`, lastEmitted, last)
	start := time.Now()
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open the session", newest+` && document.getElementById('live').dataset.state === 'following'`, 120*time.Second)
	took := time.Since(start)
	t.Logf("a session of %d events showed its newest in %v", last, took)
	if took > largeOpenBound {
		t.Errorf("the newest events of a session of %d events showed after %v, want at most %v", last, took, largeOpenBound)
	}
	count := func() (n struct{ Timeline, Events int }) {
		b.eval(`({Timeline: document.querySelectorAll('#timeline li').length, Events: document.querySelectorAll('#events tbody tr').length})`, &n)
		return n
	}
	if n := count(); n.Timeline > maxRenderedEvents || n.Events > maxRenderedEvents {
		t.Errorf("the page holds %d timeline rows and %d event rows, want at most %d", n.Timeline, n.Events, maxRenderedEvents)
	}

	// One page older, then the oldest.
	var lo int
	b.eval(`Math.min(...Array.from(document.querySelectorAll('#events tbody tr'), (e) => +e.dataset.seq))`, &lo)
	if lo <= 1 {
		t.Fatalf("the newest page starts at #%d", lo)
	}
	b.run("older page", chromedp.Click(chromedp.CSS("#page-older")))
	b.wait("older page", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && document.querySelector('#events tr[data-seq="%d"]') === null`, lo-1, last), 30*time.Second)
	b.run("oldest page", chromedp.Click(chromedp.CSS("#page-oldest")))
	b.wait("oldest page", `document.querySelector('#timeline li[data-seq="1"][data-kind="session_creation"][data-outcome="ok"]') !== null && document.querySelector('#events tr[data-seq="1"]') !== null`, 30*time.Second)
	var status string
	b.eval(`document.getElementById('page-status').textContent`, &status)
	t.Logf("page status at the oldest: %q", status)
	if n := count(); n.Timeline > maxRenderedEvents || n.Events > maxRenderedEvents {
		t.Errorf("at the oldest page the page holds %d timeline rows and %d event rows, want at most %d", n.Timeline, n.Events, maxRenderedEvents)
	}
	var disabled []bool
	b.eval(`['page-oldest', 'page-older', 'page-newer', 'page-newest'].map((id) => document.getElementById(id).disabled)`, &disabled)
	if fmt.Sprint(disabled) != "[true true false false]" {
		t.Errorf("at the oldest page the buttons oldest, older, newer, newest are disabled %v, want [true true false false]", disabled)
	}

	// Events committed while an old page is shown wait; the newest page
	// shows them and follows again.
	more := srv.emit(t, id, 5)
	b.run("newest page", chromedp.Click(chromedp.CSS("#page-newest")))
	b.wait("newest page", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && document.querySelector('#events tr[data-seq="1"]') === null`, more), 30*time.Second)
	final := srv.emit(t, id, 3)
	b.wait("follow", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, final), 30*time.Second)
	var dup int
	b.eval(`(() => { const s = Array.from(document.querySelectorAll('#events tbody tr'), (e) => e.dataset.seq); return s.length - new Set(s).size; })()`, &dup)
	if dup != 0 {
		t.Errorf("%d events are shown more than once", dup)
	}
	if n := count(); n.Timeline > maxRenderedEvents || n.Events > maxRenderedEvents {
		t.Errorf("following, the page holds %d timeline rows and %d event rows, want at most %d", n.Timeline, n.Events, maxRenderedEvents)
	}
}

// TestInspectorEnvironmentsOfLongSession opens a session longer than a
// page, whose environments were declared before the events the page
// streams: the environments tab folds the earlier records and the ones
// streamed since.
func TestInspectorEnvironmentsOfLongSession(t *testing.T) {
	b := newBrowser(t, 180*time.Second)
	const token = "long-environments-token"
	brainURL := braintest.Serve(t, t.TempDir(), token, "--no-workspace=false")
	var sum struct {
		SessionID    string `json:"session_id"`
		LastSequence int    `json:"last_sequence"`
	}
	if err := json.Unmarshal(call(t, "POST", brainURL+"/v1/sessions", token, "create-1", createWithShell), &sum); err != nil {
		t.Fatal(err)
	}
	id := sum.SessionID
	send := func(i int) {
		script := `{"tool_calls":[{"name":"sh","input":{"shell":"true"}}],"reply":"ok"}`
		body, _ := json.Marshal(map[string]any{"input": map[string]string{"message": script}})
		if err := json.Unmarshal(call(t, "POST", brainURL+"/v1/sessions/"+id+"/messages", token, fmt.Sprint("send-", i), string(body)), &sum); err != nil {
			t.Fatal(err)
		}
	}
	turns := 0
	for sum.LastSequence <= 600 {
		turns++
		send(turns)
	}

	b.login(brainURL, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open the session", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && document.querySelector('#events tr[data-seq="1"]') === null`, sum.LastSequence), 30*time.Second)
	turns++
	send(turns)
	b.wait("follow", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, sum.LastSequence), 30*time.Second)
	b.run("environments", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="environments"]`)))
	b.wait("environments", fmt.Sprintf(`(document.querySelector('#environments tr[data-env="ws"] .calls') || {}).textContent === '%d'`, turns), 30*time.Second)
	var row string
	b.eval(`document.querySelector('#environments tr[data-env="ws"]').textContent`, &row)
	for _, want := range []string{"workspace", "ws #", "ready", "sh"} {
		if !strings.Contains(row, want) {
			t.Errorf("environment row %q lacks %q", row, want)
		}
	}
}
