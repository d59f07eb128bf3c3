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

// failSecondScanPage makes the page's next read of an events page after
// the first (a JSON read, not the stream) fail once, as a dropped
// connection would.
const failSecondScanPage = `(() => {
  window.scanPagesFailed = 0;
  const f = window.fetch;
  window.fetch = (u, o) => {
    const m = String(u).match(/\/events\?after=(\d+)$/);
    const sse = o && o.headers && o.headers.Accept === 'text/event-stream';
    if (m && !sse && +m[1] > 0 && window.scanPagesFailed === 0) {
      window.scanPagesFailed++;
      return Promise.reject(new TypeError('connection dropped'));
    }
    return f(u, o);
  };
  return true;
})()`

// shellSession is a real Brain's session whose turns each make perTurn
// shell tool calls on its environment ws.
type shellSession struct {
	t        *testing.T
	url, id  string
	token    string
	turns    int
	last     int
	perTurn  int
	sendBody string
}

func newShellSession(t *testing.T, token string, perTurn int) *shellSession {
	t.Helper()
	s := &shellSession{t: t, token: token, perTurn: perTurn}
	s.url = braintest.Serve(t, t.TempDir(), token, "--no-workspace=false")
	var sum struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(call(t, "POST", s.url+"/v1/sessions", token, "create-1", createWithShell), &sum); err != nil {
		t.Fatal(err)
	}
	s.id = sum.SessionID
	calls := make([]string, perTurn)
	for i := range calls {
		calls[i] = `{"name":"sh","input":{"shell":"true"}}`
	}
	body, _ := json.Marshal(map[string]any{"input": map[string]string{"message": `{"tool_calls":[` + strings.Join(calls, ",") + `],"reply":"ok"}`}})
	s.sendBody = string(body)
	return s
}

// send runs one turn and answers the session's last sequence.
func (s *shellSession) send() int {
	s.t.Helper()
	s.turns++
	var sum struct {
		LastSequence int `json:"last_sequence"`
	}
	if err := json.Unmarshal(call(s.t, "POST", s.url+"/v1/sessions/"+s.id+"/messages", s.token, fmt.Sprint("send-", s.turns), s.sendBody), &sum); err != nil {
		s.t.Fatal(err)
	}
	s.last = sum.LastSequence
	return s.last
}

// open logs b in to the session's Brain and shows the session, up to its
// last event.
func (s *shellSession) open(b *browser) {
	s.t.Helper()
	b.login(s.url, s.token)
	var ok bool
	b.eval(`location.hash = '#/s/`+s.id+`', true`, &ok)
	b.wait("open the session", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, s.last), 60*time.Second)
}

// environmentRow answers what the environments tab shows of ws.
func environmentRow(b *browser) (row struct{ Calls, Tools string }) {
	b.t.Helper()
	b.wait("environments", `document.querySelector('#environments tr[data-env="ws"] .calls') !== null`, 30*time.Second)
	b.eval(`(() => { const r = document.querySelector('#environments tr[data-env="ws"]'); return {Calls: r.querySelector('.calls').textContent, Tools: r.cells[4].textContent}; })()`, &row)
	return row
}

// TestInspectorEnvironmentsScanRetried opens a session whose earlier
// records span more than one events page, and shows its environments tab
// while the read of the second page fails: shown again, the tab folds the
// earlier records once, not once more over what the failed read folded.
func TestInspectorEnvironmentsScanRetried(t *testing.T) {
	b := newBrowser(t, 240*time.Second)
	s := newShellSession(t, "environments-scan-token", 100)
	// The page streams the newest 500 events and reads the ones before
	// from the events API, 1000 a page: more than 1500 make two pages.
	for s.last <= 1600 {
		s.send()
	}
	want := s.turns * s.perTurn
	t.Logf("%d turns, %d tool calls, %d events", s.turns, want, s.last)

	s.open(b)
	var ok bool
	b.eval(failSecondScanPage, &ok)
	b.run("environments", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="environments"]`)))
	b.wait("the failed read", `window.scanPagesFailed === 1 && document.getElementById('action-error').textContent.includes('environments')`, 30*time.Second)
	b.run("timeline", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="timeline"]`)))
	b.run("environments again", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="environments"]`)))
	row := environmentRow(b)
	if row.Calls != fmt.Sprint(want) {
		t.Errorf("environment ws shows %s tool calls, want %d", row.Calls, want)
	}
	if row.Tools != "sh" {
		t.Errorf("environment ws shows tools %q, want %q", row.Tools, "sh")
	}
}

// maxHeldEnvironmentRecords bounds the streamed records a page that
// follows a long session holds for its environments tab before the tab
// first shows.
const maxHeldEnvironmentRecords = 1000

// TestInspectorEnvironmentsOfFollowedSession follows a session longer
// than a page through many tool calls without showing its environments
// tab: the page holds a bounded number of the streamed records for it,
// and the tab, shown at last, counts every call.
func TestInspectorEnvironmentsOfFollowedSession(t *testing.T) {
	b := newBrowser(t, 240*time.Second)
	s := newShellSession(t, "environments-follow-token", 100)
	for s.last <= 600 {
		s.send()
	}
	s.open(b)
	for range 10 {
		b.wait("follow", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, s.send()), 60*time.Second)
	}
	var held int
	b.eval(`view.envQueue.length`, &held)
	t.Logf("%d records held after %d turns", held, s.turns)
	if held > maxHeldEnvironmentRecords {
		t.Errorf("the page holds %d streamed records for its environments tab, want at most %d", held, maxHeldEnvironmentRecords)
	}
	b.run("environments", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="environments"]`)))
	want := s.turns * s.perTurn
	if row := environmentRow(b); row.Calls != fmt.Sprint(want) || row.Tools != "sh" {
		t.Errorf("environment ws shows %s tool calls of tools %q, want %d of %q", row.Calls, row.Tools, want, "sh")
	}
	// Records streamed once the tab has shown are folded as they come.
	b.wait("follow", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, s.send()), 60*time.Second)
	want += s.perTurn
	b.wait("calls", fmt.Sprintf(`document.querySelector('#environments tr[data-env="ws"] .calls').textContent === '%d'`, want), 30*time.Second)
}

// TestInspectorEnvironmentsTabShownOnOpen opens a session longer than a
// page while its environments tab is the one selected (it was when the
// page left the session before): the tab folds the earlier records as it
// shows, as when it is clicked.
func TestInspectorEnvironmentsTabShownOnOpen(t *testing.T) {
	b := newBrowser(t, 240*time.Second)
	s := newShellSession(t, "environments-open-token", 100)
	for s.last <= 600 {
		s.send()
	}
	want := s.turns * s.perTurn
	s.open(b)
	var ok bool
	b.run("environments", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="environments"]`)))
	if row := environmentRow(b); row.Calls != fmt.Sprint(want) {
		t.Fatalf("environment ws shows %s tool calls, want %d", row.Calls, want)
	}

	b.eval(`location.hash = '#/', true`, &ok)
	b.run("list", chromedp.WaitVisible(chromedp.CSS("#list")))
	b.eval(`location.hash = '#/s/`+s.id+`', true`, &ok)
	b.wait("open the session again", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && !document.getElementById('tab-environments').hidden`, s.last), 60*time.Second)
	if row := environmentRow(b); row.Calls != fmt.Sprint(want) || row.Tools != "sh" {
		t.Errorf("opened again on its environments tab, environment ws shows %s tool calls of tools %q, want %d of %q", row.Calls, row.Tools, want, "sh")
	}
}

// holdScanPages makes the page's reads of events pages (JSON reads, not
// the stream) wait until window.releaseScan() is called.
const holdScanPages = `(() => {
  window.scanHeld = 0;
  let go;
  const released = new Promise((r) => { go = r; });
  window.releaseScan = () => go();
  const f = window.fetch;
  window.fetch = (u, o) => {
    const sse = o && o.headers && o.headers.Accept === 'text/event-stream';
    if (/\/events\?after=\d+$/.test(String(u)) && !sse) {
      window.scanHeld++;
      return released.then(() => f(u, o));
    }
    return f(u, o);
  };
  return true;
})()`

// TestInspectorEnvironmentsTabSaysItIsReading: while the environments tab
// folds the records before the streamed ones, its empty table is said to
// be loading, not a session without environments; once folded, the rows
// show and the note goes.
func TestInspectorEnvironmentsTabSaysItIsReading(t *testing.T) {
	b := newBrowser(t, 240*time.Second)
	s := newShellSession(t, "environments-reading-token", 100)
	for s.last <= 600 {
		s.send()
	}
	s.open(b)
	var ok bool
	b.eval(holdScanPages, &ok)
	b.run("environments", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="environments"]`)))
	b.wait("the scan waits", `window.scanHeld > 0`, 30*time.Second)
	var shown struct {
		Rows   int    `json:"rows"`
		Status string `json:"status"`
	}
	b.eval(`({rows: document.querySelectorAll('#environments tbody tr').length, status: document.getElementById('environments-status').textContent})`, &shown)
	if shown.Rows != 0 || !strings.Contains(shown.Status, "reading") {
		t.Errorf("while the records are read the tab shows %d rows and says %q; want no rows and that it is reading", shown.Rows, shown.Status)
	}
	b.eval(`window.releaseScan(), true`, &ok)
	if row := environmentRow(b); row.Calls != fmt.Sprint(s.turns*s.perTurn) {
		t.Errorf("environment ws shows %s tool calls, want %d", row.Calls, s.turns*s.perTurn)
	}
	var status string
	b.eval(`document.getElementById('environments-status').textContent`, &status)
	if status != "" {
		t.Errorf("once the environments show, the tab still says %q", status)
	}
}
