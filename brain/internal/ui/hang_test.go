package ui_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pageRead matches the reads of a page of session id's events, not its
// event stream.
func pageRead(id string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/"+id+"/events" &&
			!strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	}
}

// TestInspectorPageReadHangs: the read of the newest page hangs while the
// session commits thousands of records. The page holds no more of them
// than the window shows; once the read is answered the window shows the
// newest events, each once. A read that is not answered at all is given
// up, says so and leaves the window as it was, following the session.
func TestInspectorPageReadHangs(t *testing.T) {
	b := newBrowser(t, 180*time.Second)
	const token = "page-hangs-token"
	srv := serveInProcess(t, token, 0)
	proxy := newHoldProxy(t, srv.url)
	id := srv.session(t)
	first := srv.emit(t, id, 600) // more than a page: the pager shows
	b.login(proxy.url, token)
	b.openSession(id)
	b.wait("the newest events show", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, first), 30*time.Second)
	b.run("oldest page", chromedp.Click(chromedp.CSS("#page-oldest")))
	b.wait("the oldest page", `(document.querySelector('#events tbody tr') || {dataset: {}}).dataset.seq === '1' && !document.getElementById('page-newest').disabled`, 30*time.Second)

	release, read := proxy.hold(pageRead(id), false)
	b.run("newest page", chromedp.Click(chromedp.CSS("#page-newest")))
	read.waitHeld(t)
	last := srv.emit(t, id, 3000)
	b.wait("the records streamed", fmt.Sprintf(`view.last === %d`, last), 60*time.Second)
	var held int
	b.eval(`view.pending ? view.pending.length : -1`, &held)
	if held < 0 || held > 2*1000 {
		t.Errorf("while the newest page loads the page holds %d records, want at most 2000 (the window shows 1000)", held)
	}
	release()
	b.wait("the newest events show", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && view.pending === null`, last), 30*time.Second)
	window := func() []int {
		t.Helper()
		var seqs []int
		b.eval(`Array.from(document.querySelectorAll('#events tbody tr'), (e) => +e.dataset.seq)`, &seqs)
		return seqs
	}
	contiguous := func(seqs []int, lo, hi int) bool {
		if len(seqs) != hi-lo+1 {
			return false
		}
		for i, s := range seqs {
			if s != lo+i {
				return false
			}
		}
		return true
	}
	if seqs := window(); !contiguous(seqs, int(last)-999, int(last)) {
		t.Errorf("the window shows %d events (#%d to #%d), want #%d to #%d each once", len(seqs), seqs[0], seqs[len(seqs)-1], last-999, last)
	}

	// A read that is not answered.
	release, read = proxy.hold(pageRead(id), false)
	defer release()
	b.run("older page", chromedp.Click(chromedp.CSS("#page-older")))
	read.waitHeld(t)
	b.wait("the read is given up", actionError+`.startsWith('events: ') && !document.getElementById('page-status').textContent.startsWith('loading')`, 60*time.Second)
	var shown string
	b.eval(actionError, &shown)
	t.Logf("the page says %q", shown)
	next := srv.emit(t, id, 1)
	b.wait("the window follows the session", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, next), 30*time.Second)
	if seqs := window(); !contiguous(seqs, int(next)-999, int(next)) {
		t.Errorf("after the read was given up the window shows %d events (#%d to #%d), want #%d to #%d each once", len(seqs), seqs[0], seqs[len(seqs)-1], next-999, next)
	}
}

// TestInspectorLeftSessionFreesItsReads: the reads of a session's status
// hang, and the page is sent to it and back to the list again and again,
// as a user does with a session that does not load. Once it has left the
// session, its reads of it no longer hold the browser's connections: a
// session opened next shows at once, not once the hung reads are given
// up.
func TestInspectorLeftSessionFreesItsReads(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "left-reads-token"
	srv := serveInProcess(t, token, 0)
	proxy := newHoldProxy(t, srv.url)
	hung, other := srv.session(t), srv.session(t)
	last := srv.emit(t, other, 1)
	b.login(proxy.url, token)

	release, read := proxy.hold(func(r *http.Request) bool {
		return r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/"+hung
	}, false)
	defer release()
	var ok bool
	// Chromium opens at most 6 connections to a server.
	for i := 1; i <= 6; i++ {
		b.eval(`location.hash = '#/s/`+hung+`', true`, &ok)
		read.waitFor(t, func() bool { return read.held >= i }, "the status was not read")
		b.eval(`location.hash = '#/', true`, &ok)
	}
	start := time.Now()
	b.eval(`location.hash = '#/s/`+other+`', true`, &ok)
	b.wait("the other session shows", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null &&
	  document.getElementById('live').dataset.state === 'following'`, last), 10*time.Second)
	t.Logf("the other session showed after %v", time.Since(start))
}

// TestInspectorLeftListFreesItsReads: the reads of the session list
// hang, and the page goes from the list to a session and back again and
// again. Once it has left the list, its reads no longer hold the
// browser's connections: a session opened next shows at once.
func TestInspectorLeftListFreesItsReads(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "left-list-token"
	srv := serveInProcess(t, token, 0)
	proxy := newHoldProxy(t, srv.url)
	id := srv.session(t)
	last := srv.emit(t, id, 1)
	b.login(proxy.url, token)

	release, read := proxy.hold(func(r *http.Request) bool {
		return r.Method == http.MethodGet && r.URL.Path == "/v1/sessions"
	}, false)
	defer release()
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	// Chromium opens at most 6 connections to a server.
	for i := 1; i <= 6; i++ {
		b.eval(`location.hash = '#/', true`, &ok)
		read.waitFor(t, func() bool { return read.held >= i }, "the list was not read")
		b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	}
	b.wait("the session shows", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null &&
	  document.getElementById('live').dataset.state === 'following'`, last), 10*time.Second)
}
