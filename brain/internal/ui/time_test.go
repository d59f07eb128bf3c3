package ui_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// TestInspectorRecordedDates opens a session created just before
// midnight, in the browser's time zone, whose turn ran just after: the
// events table says on which day each event was recorded, in that zone,
// so that the events of a session that runs for days are not told apart
// by their time of day alone.
func TestInspectorRecordedDates(t *testing.T) {
	const zone = "America/New_York"
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	before := time.Date(2026, 3, 1, 23, 59, 58, 250e6, loc)
	after := time.Date(2026, 3, 2, 0, 0, 3, 500e6, loc)
	var now atomic.Pointer[time.Time]
	now.Store(&before)
	srv := serveOn(t, nil, "dates-token", 0, nil, func(c *session.Config) {
		c.Now = func() time.Time { return *now.Load() }
	})
	id := srv.session(t)
	now.Store(&after)
	sum, err := srv.engine.Send(context.Background(), id, api.UserInput{Message: "1"})
	if err != nil {
		t.Fatal(err)
	}
	turn := srv.lastOf(t, id, api.KindTurnStarted)

	b := newBrowser(t, 60*time.Second, chromedp.Env("TZ="+zone))
	b.login(srv.url, "dates-token")
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open the session", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, sum.LastSequence), 30*time.Second)
	var got struct {
		Created string `json:"created"`
		Turn    string `json:"turn"`
		Title   string `json:"title"`
	}
	b.eval(fmt.Sprintf(`(() => {
	  const cell = (seq) => document.querySelector('#events tr[data-seq="' + seq + '"]').cells[1];
	  return {created: cell(1).textContent, turn: cell(%d).textContent, title: cell(%d).querySelector('[title]') ? cell(%d).querySelector('[title]').title : cell(%d).title};
	})()`, turn, turn, turn, turn), &got)
	if !strings.Contains(got.Created, "2026-03-01") || !strings.Contains(got.Created, "23:59:58.250") {
		t.Errorf("the session's first event shows as recorded %q, want 2026-03-01 23:59:58.250", got.Created)
	}
	if !strings.Contains(got.Turn, "2026-03-02") || !strings.Contains(got.Turn, "00:00:03.500") {
		t.Errorf("the turn shows as recorded %q, want 2026-03-02 00:00:03.500", got.Turn)
	}
	if utc := after.UTC().Format("2006-01-02T15:04:05.000Z"); !strings.Contains(got.Title, utc) {
		t.Errorf("the turn's time is titled %q, want the time in UTC, %s", got.Title, utc)
	}
}
