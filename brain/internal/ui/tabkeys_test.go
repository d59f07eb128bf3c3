package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestInspectorTabsByArrowKeys moves between the session's tabs from the
// keyboard as a tab list is used: the arrow keys, Home and End select
// the tab they move the focus to, and Tab leaves the list from the
// selected tab alone rather than stepping through every tab.
func TestInspectorTabsByArrowKeys(t *testing.T) {
	b := newBrowser(t, 60*time.Second)
	const token = "tab-keys-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open the session", `document.getElementById('live').dataset.state === 'following'`, 30*time.Second)
	b.run("focus the timeline tab", chromedp.Focus(chromedp.CSS(`.tabs button[data-tab="timeline"]`)))
	state := func() string {
		t.Helper()
		var s string
		b.eval(`document.activeElement.dataset.tab + ' ' +
		  document.querySelector('.tabs [aria-selected="true"]').dataset.tab + ' ' +
		  Array.from(document.querySelectorAll('.tab')).filter((p) => !p.hidden).map((p) => p.id).join(',') + ' ' +
		  Array.from(document.querySelectorAll('.tabs button')).filter((e) => e.tabIndex >= 0).map((e) => e.dataset.tab).join(',')`, &s)
		return s
	}
	// Each state is the tab focused, the one selected, the panels shown
	// and the tabs in the Tab sequence.
	for _, step := range []struct{ name, key, want string }{
		{"Right", kb.ArrowRight, "transcript transcript tab-transcript transcript"},
		{"Right", kb.ArrowRight, "environments environments tab-environments environments"},
		{"End", kb.End, "events events tab-events events"},
		{"Right", kb.ArrowRight, "timeline timeline tab-timeline timeline"},
		{"Left", kb.ArrowLeft, "events events tab-events events"},
		{"Home", kb.Home, "timeline timeline tab-timeline timeline"},
	} {
		b.run("press "+step.name, chromedp.KeyEvent(step.key))
		if got := state(); got != step.want {
			t.Fatalf("after %s the tabs are %q, want %q (focused, selected, shown, in the Tab sequence)", step.name, got, step.want)
		}
	}
}
