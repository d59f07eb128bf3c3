package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestInspectorOlderPageEntriesEndingLater: on an older page, a turn and
// an activation that started there and ended after the page's last event
// do not show as running (the session is idle): they say that they go on
// past the page.
func TestInspectorOlderPageEntriesEndingLater(t *testing.T) {
	b := newBrowser(t, 90*time.Second)
	const token = "older-page-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	last := srv.emit(t, id, 1200) // one turn, longer than two pages
	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open the session", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, last), 30*time.Second)
	b.run("oldest page", chromedp.Click(chromedp.CSS("#page-oldest")))
	b.wait("oldest page", `document.querySelector('#timeline li[data-seq="1"][data-kind="session_creation"]') !== null`, 30*time.Second)
	var got []struct {
		Kind    string `json:"kind"`
		Outcome string `json:"outcome"`
		Text    string `json:"text"`
	}
	b.eval(`Array.from(document.querySelectorAll('#timeline li[data-kind="turn"], #timeline li[data-kind="activation"]'),
	  (li) => ({kind: li.dataset.kind, outcome: li.dataset.outcome, text: li.querySelector('.outcome').textContent}))`, &got)
	if len(got) != 2 {
		t.Fatalf("the oldest page shows %d turn and activation rows (%+v), want 2", len(got), got)
	}
	for _, r := range got {
		if r.Outcome == "running" || r.Text != "continues after #500" {
			t.Errorf("the %s row shows %q (%s) on the oldest page of an idle session, want that it continues after #500", r.Kind, r.Text, r.Outcome)
		}
	}
	// Back at the newest events the turn's end shows as its own row, and
	// nothing runs.
	b.run("newest page", chromedp.Click(chromedp.CSS("#page-newest")))
	b.wait("newest page", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && document.querySelector('#events tr[data-seq="1"]') === null`, last), 30*time.Second)
	var running int
	b.eval(`document.querySelectorAll('#timeline li[data-outcome="running"]').length`, &running)
	if running != 0 {
		t.Errorf("at the newest page of an idle session %d rows show as running", running)
	}
}
