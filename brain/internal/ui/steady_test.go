package ui_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/api"
)

// TestInspectorPagerCountsSteadyStream shows an older page of a session
// while a turn streams events 20 ms apart for 4 s: the pager's count of
// the session's events and of the newer ones grows while they stream,
// not only once the stream pauses.
func TestInspectorPagerCountsSteadyStream(t *testing.T) {
	b := newBrowser(t, 90*time.Second)
	const token = "steady-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	last := srv.emit(t, id, 600)
	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open the session", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && document.getElementById('live').dataset.state === 'following'`, last), 30*time.Second)
	b.run("oldest page", chromedp.Click(chromedp.CSS("#page-oldest")))
	b.wait("the oldest page", fmt.Sprintf(`document.getElementById('page-status').textContent.endsWith(' of %d (%d newer)')`, last, last-500), 30*time.Second)

	const events = 200 // 4 s
	start := time.Now()
	turn := make(chan error, 1)
	go func() {
		_, err := srv.engine.Send(context.Background(), id, api.UserInput{Message: "paced " + strconv.Itoa(events)})
		turn <- err
	}()
	defer func() {
		if err := <-turn; err != nil {
			t.Errorf("the paced turn: %v", err)
		}
	}()
	// Within 2 s, half the time the events take to stream, the count
	// has grown by more than the turn's first records.
	b.wait("the count grows", fmt.Sprintf(`(() => {
	  const m = document.getElementById('page-status').textContent.match(/ of (\d+) /);
	  return m !== null && +m[1] > %d;
	})()`, last+20), 2*time.Second)
	if took := time.Since(start); took >= events*20*time.Millisecond {
		t.Fatalf("the count grew after %v, once the events had streamed", took)
	}
	var status string
	b.eval(`document.getElementById('page-status').textContent`, &status)
	m := regexp.MustCompile(`of (\d+) \((\d+) newer\)`).FindStringSubmatch(status)
	if m == nil {
		t.Fatalf("the pager says %q, want the count of the events and of the newer ones", status)
	}
	of, _ := strconv.Atoi(m[1])
	newer, _ := strconv.Atoi(m[2])
	if newer != of-500 {
		t.Errorf("the pager says %q: %d newer of %d, want %d", status, newer, of, of-500)
	}
}
