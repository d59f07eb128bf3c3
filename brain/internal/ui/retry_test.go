package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestInspectorOlderPageReadRetried: the read of an older page fails; the
// page says so and keeps the events it showed, following the session as
// before, and "Older" reads the same older page again, whether it is the
// oldest (#1 on) or one in the middle.
func TestInspectorOlderPageReadRetried(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "older-retry-token"
	srv := serveInProcess(t, token, 0)
	b.login(srv.url, token)
	var ok bool
	b.eval(failPageReads, &ok)
	for _, n := range []int{600, 1200} {
		id := srv.session(t)
		last := int(srv.emit(t, id, n))
		b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
		b.wait("the session shows", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null &&
		  document.getElementById('live').dataset.state === 'following'`, last), 30*time.Second)
		lo := last - 500 + 1
		older := max(1, lo-500)

		b.eval(`window.failPages = 1, true`, &ok)
		b.run("older page", chromedp.Click(chromedp.CSS("#page-older")))
		b.wait("the failed read shows", actionError+`.includes('page read was refused') && !document.getElementById('page-status').textContent.startsWith('loading')`, 30*time.Second)
		var got struct {
			Seqs     []int  `json:"seqs"`
			Disabled []bool `json:"disabled"`
		}
		b.eval(`({seqs: Array.from(document.querySelectorAll('#events tbody tr'), (e) => +e.dataset.seq),
		  disabled: ['page-oldest', 'page-older', 'page-newer', 'page-newest'].map((id) => document.getElementById(id).disabled)})`, &got)
		if len(got.Seqs) != 500 || got.Seqs[0] != lo || got.Seqs[len(got.Seqs)-1] != last {
			t.Errorf("%d events: after the older page failed to read, the page shows %d events (%v...), want #%d to #%d as before", n, len(got.Seqs), got.Seqs[:min(3, len(got.Seqs))], lo, last)
		}
		if fmt.Sprint(got.Disabled) != "[false false true true]" {
			t.Errorf("%d events: after the older page failed to read, the buttons oldest, older, newer, newest are disabled %v, want [false false true true]", n, got.Disabled)
		}

		// The window still follows the session.
		next := int(srv.emit(t, id, 1))
		b.wait("new events show", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, next), 30*time.Second)

		// Older reads the page it failed to read, not the one before it.
		b.run("older page again", chromedp.Click(chromedp.CSS("#page-older")))
		b.wait("the older page", fmt.Sprintf(`+((document.querySelector('#events tbody tr') || {dataset: {seq: 0}}).dataset.seq) === %d`, older), 30*time.Second)
		var shown string
		b.eval(actionError, &shown)
		if shown != "" {
			t.Errorf("%d events: once the older page was read, the page still says %q", n, shown)
		}
	}
}
