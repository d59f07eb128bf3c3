package ui_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/braintest"
)

// page is a headless Chromium tab on a real Brain's inspector, logged in
// with the operator token.
type page struct {
	*browser
	base  string
	token string
}

func openPage(t *testing.T) *page {
	t.Helper()
	const token = "inspector-page-token"
	base := braintest.Serve(t, t.TempDir(), token)
	p := &page{browser: newBrowser(t, 90*time.Second), base: base, token: token}
	p.run("log in",
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#list")))
	return p
}

func (p *page) poll(what, expr string) {
	p.t.Helper()
	p.run(what, void(chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))))
}

// countEventStreams makes the page count the event streams it opens, in
// window.streamsOpened.
const countEventStreams = `(() => {
  window.streamsOpened = 0;
  if (window.fetchCounted) return true;
  window.fetchCounted = true;
  const f = window.fetch;
  window.fetch = (u, o) => { if (String(u).includes('/events')) window.streamsOpened++; return f(u, o); };
  return true;
})()`

// TestInspectorMissingSession opens sessions that do not exist (one that
// was never created, one whose id cannot be a session's): the page says
// so and stops, instead of reconnecting to its event stream every second.
func TestInspectorMissingSession(t *testing.T) {
	p := openPage(t)
	for _, id := range []string{"ses_AAAAAAAAAAAAAAAAAAAAAAAA", "ses_short"} {
		var ok bool
		p.eval(`location.hash = '#/'; true`, &ok)
		p.run("list", chromedp.WaitVisible(chromedp.CSS("#list")))
		p.eval(countEventStreams, &ok)
		p.eval(`location.hash = '#/s/`+id+`'; true`, &ok)
		p.run("session view", chromedp.WaitVisible(chromedp.CSS("#session")))
		time.Sleep(2500 * time.Millisecond)
		var state struct {
			Live    string `json:"live"`
			Streams int    `json:"streams"`
			Error   string `json:"error"`
		}
		p.eval(`({live: document.getElementById('live').dataset.state, streams: window.streamsOpened,
		  error: document.getElementById('action-error').textContent})`, &state)
		if state.Live != "not found" || state.Streams > 1 {
			t.Errorf("%s: after 2.5 s the page is %q having opened %d event streams, want not found after at most 1", id, state.Live, state.Streams)
		}
		if !strings.Contains(state.Error, id+" does not exist") {
			t.Errorf("%s: the page says %q, want that there is no such session", id, state.Error)
		}
	}
}

// TestInspectorShowsMarkupAsText sends messages holding HTML and script:
// the timeline, the events table and the transcript show them as text and
// nothing of them runs.
func TestInspectorShowsMarkupAsText(t *testing.T) {
	p := openPage(t)
	var sum struct {
		SessionID string `json:"session_id"`
	}
	body := `{"model":{"provider":"scripted","name":"demo"}}`
	if err := json.Unmarshal(call(t, "POST", p.base+"/v1/sessions", p.token, "create-markup", body), &sum); err != nil {
		t.Fatal(err)
	}
	const hostile = `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script><b id="injected">bold</b>`
	msg, _ := json.Marshal(map[string]any{"input": map[string]any{"message": hostile}})
	call(t, "POST", p.base+"/v1/sessions/"+sum.SessionID+"/messages", p.token, "markup-1", string(msg))
	var ok bool
	p.eval(`location.hash = '#/s/`+sum.SessionID+`'; true`, &ok)
	p.run("turn", chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-kind="turn"][data-outcome="ok"]`)))
	p.run("transcript", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="transcript"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript .block[data-type="text"]`)))
	p.poll("transcript text", `Array.from(document.querySelectorAll('#transcript pre')).some(e => e.textContent.includes('<script>'))`)
	var got struct {
		Pwned    any    `json:"pwned"`
		Injected int    `json:"injected"`
		Turn     string `json:"turn"`
		Events   bool   `json:"events"`
	}
	p.eval(`({pwned: window.pwned === undefined ? null : window.pwned,
	  injected: document.querySelectorAll('#injected, main img, main script').length,
	  turn: document.querySelector('#timeline li[data-kind="turn"] .summary').textContent,
	  events: Array.from(document.querySelectorAll('#events pre')).some(e => e.textContent.includes('<img src=x'))})`, &got)
	if got.Pwned != nil || got.Injected != 0 {
		t.Errorf("event data ran as markup: pwned=%v, %d injected elements", got.Pwned, got.Injected)
	}
	if !strings.Contains(got.Turn, `<b id="injected">bold</b>`) || !got.Events {
		t.Errorf("turn row %q (events table shows the markup: %v), want the message as text", got.Turn, got.Events)
	}
}

// TestInspectorKeyboard uses the page from the keyboard: the focus stays
// on a session's link while the list refreshes, the tabs say which one is
// selected, and the message box and the error lines are labelled for
// assistive technology.
func TestInspectorKeyboard(t *testing.T) {
	p := openPage(t)
	body := `{"model":{"provider":"scripted","name":"demo"}}`
	var ids []string
	for _, key := range []string{"kb-1", "kb-2"} {
		var sum struct {
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal(call(t, "POST", p.base+"/v1/sessions", p.token, key, body), &sum); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sum.SessionID)
	}
	link := `#sessions tr[data-session="` + ids[1] + `"] a`
	p.run("list", chromedp.WaitVisible(chromedp.CSS(link)))
	var ok bool
	p.eval(`document.querySelector('`+link+`').focus(); document.activeElement.textContent === '`+ids[1]+`'`, &ok)
	if !ok {
		t.Fatal("the session link cannot take the focus")
	}
	time.Sleep(4500 * time.Millisecond) // two refreshes of the list
	var focused string
	p.eval(`document.activeElement ? document.activeElement.tagName + ' ' + document.activeElement.textContent : ''`, &focused)
	if focused != "A "+ids[1] {
		t.Errorf("after the list refreshed the focus is on %q, want the link of %s", focused, ids[1])
	}

	p.run("open the session", chromedp.Click(chromedp.CSS(link)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-kind="session_creation"]`)),
		chromedp.Click(chromedp.CSS(`.tabs button[data-tab="transcript"]`)))
	var a11y struct {
		Selected  []string `json:"selected"`
		Roles     []string `json:"roles"`
		Message   string   `json:"message"`
		Alerts    int      `json:"alerts"`
		PanelName string   `json:"panelName"`
	}
	p.eval(`({
	  selected: Array.from(document.querySelectorAll('.tabs button')).map(b => b.dataset.tab + '=' + b.getAttribute('aria-selected')),
	  roles: [document.querySelector('.tabs').getAttribute('role')].concat(Array.from(document.querySelectorAll('.tabs button')).map(b => b.getAttribute('role'))),
	  message: (document.getElementById('message').labels[0] || {}).textContent || document.getElementById('message').getAttribute('aria-label') || '',
	  alerts: document.querySelectorAll('#login-error[role=alert], #list-error[role=alert], #action-error[role=alert]').length,
	  panelName: document.getElementById('tab-transcript').getAttribute('role') + ' ' + document.getElementById('tab-transcript').getAttribute('aria-labelledby'),
	})`, &a11y)
	want := []string{"timeline=false", "transcript=true", "environments=false", "events=false"}
	if strings.Join(a11y.Selected, ",") != strings.Join(want, ",") {
		t.Errorf("tabs aria-selected %v, want %v", a11y.Selected, want)
	}
	if strings.Join(a11y.Roles, ",") != "tablist,tab,tab,tab,tab" {
		t.Errorf("tab roles %v, want a tablist of tabs", a11y.Roles)
	}
	if a11y.PanelName != "tabpanel tab-button-transcript" {
		t.Errorf("transcript panel %q, want a tabpanel labelled by its tab", a11y.PanelName)
	}
	if a11y.Message == "" {
		t.Error("the message box has no label")
	}
	if a11y.Alerts != 3 {
		t.Errorf("%d of the 3 error lines are announced (role=alert)", a11y.Alerts)
	}
}

// TestInspectorUnsendableToken enters a token that cannot be sent in a
// header (a pasted typographic quote): the page says so and keeps asking
// for a token, also after a reload, instead of keeping the token and
// failing every request with it.
func TestInspectorUnsendableToken(t *testing.T) {
	p := openPage(t)
	p.run("forget the token", chromedp.Click(chromedp.CSS("#forget")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	p.run("log in with a token that is not ISO-8859-1",
		chromedp.SendKeys(chromedp.CSS("#token"), "\u201c"+p.token+"\u201d"),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
	p.poll("an error", `document.getElementById('login-error').textContent !== ''`)
	p.run("reload", chromedp.Reload())
	time.Sleep(500 * time.Millisecond)
	var got struct {
		Stored any  `json:"stored"`
		Login  bool `json:"login"`
	}
	p.eval(`({stored: sessionStorage.getItem('brain.inspector.token'), login: !document.getElementById('login').hidden})`, &got)
	if got.Stored != nil || !got.Login {
		t.Errorf("after the refused token the page keeps %v and shows the login form: %v", got.Stored, got.Login)
	}
}
