package ui_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestInspectorLongWordsWrap: a record whose data is one long word (JSON
// has no spaces) shows in the timeline within its row's summary column,
// wrapped, instead of running over the duration, outcome and origin
// columns and making the whole page scroll sideways; so does the events
// table.
func TestInspectorLongWordsWrap(t *testing.T) {
	b := newBrowser(t, 90*time.Second)
	const token = "long-words-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	sum, err := srv.engine.Send(context.Background(), id, api.UserInput{Message: "blob 400"})
	if err != nil {
		t.Fatal(err)
	}
	blob := srv.lastOf(t, id, "blob")
	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open the session", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, sum.LastSequence), 30*time.Second)
	var got struct {
		Rows []struct {
			Seq    string  `json:"seq"`
			Scroll int     `json:"scroll"`
			Client int     `json:"client"`
			Right  float64 `json:"right"`
			Next   float64 `json:"next"`
		} `json:"rows"`
		Page, Window int
	}
	b.eval(`({
	  rows: Array.from(document.querySelectorAll('#timeline li'), (li) => {
	    const s = li.querySelector('.summary');
	    return {seq: li.dataset.seq, scroll: s.scrollWidth, client: s.clientWidth,
	      right: s.getBoundingClientRect().right, next: li.querySelector('.duration').getBoundingClientRect().left};
	  }),
	  Page: document.documentElement.scrollWidth, Window: innerWidth,
	})`, &got)
	found := false
	for _, r := range got.Rows {
		if r.Seq == fmt.Sprint(blob) {
			found = true
		}
		if r.Scroll > r.Client+1 || r.Right > r.Next {
			t.Errorf("the summary of row #%s is %d px wide in a column of %d px", r.Seq, r.Scroll, r.Client)
		}
	}
	if !found {
		t.Errorf("the timeline has no row #%d", blob)
	}
	if got.Page > got.Window {
		t.Errorf("the page is %d px wide in a window of %d px", got.Page, got.Window)
	}
	b.eval(`document.querySelector('.tabs button[data-tab="events"]').click(), true`, &ok)
	b.eval(`({Page: document.documentElement.scrollWidth, Window: innerWidth})`, &got)
	if got.Page > got.Window {
		t.Errorf("with the events tab shown the page is %d px wide in a window of %d px", got.Page, got.Window)
	}
}
