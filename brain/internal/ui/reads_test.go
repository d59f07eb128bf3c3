package ui_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/api"
)

// watchReads makes the page count its reads of the summary and of the
// transcript of session id (whatever part of it they ask for) in
// window.reads, and note the URL of every
// event stream it opens in window.reads.streams. window.failNext.summary
// (and .transcript) make that many of the next reads fail with 503.
const watchReads = `((id) => {
  window.reads = {summary: 0, transcript: 0, streams: []};
  window.failNext = {summary: 0, transcript: 0};
  const f = window.fetch;
  window.fetch = (u, o) => {
    const path = String(u);
    let what = null;
    if (path === '/v1/sessions/' + id) what = 'summary';
    else if (path.split('?')[0] === '/v1/sessions/' + id + '/transcript') what = 'transcript';
    else if (path.startsWith('/v1/sessions/' + id + '/events') && o && o.headers && o.headers.Accept === 'text/event-stream') window.reads.streams.push(path);
    if (what) {
      window.reads[what]++;
      if (window.failNext[what] > 0) {
        window.failNext[what]--;
        return Promise.resolve(new Response(JSON.stringify({code: 'unavailable', message: 'the ' + what + ' read was refused'}),
          {status: 503, headers: {'Content-Type': 'application/json'}}));
      }
    }
    return f(u, o);
  };
  return true;
})`

const actionError = `document.getElementById('action-error').textContent`

// watchSession logs the page in at base with token, makes it count its
// reads of session id (watchReads), evaluates the expressions before and
// opens the session.
func (b *browser) watchSession(base, token, id string, before ...string) {
	b.t.Helper()
	b.login(base, token)
	var ok bool
	b.eval(watchReads+`('`+id+`')`, &ok)
	for _, expr := range before {
		b.eval(expr+`, true`, &ok)
	}
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
}

// followWithTranscript shows the transcript tab of the session the page
// opens and waits until the page follows the session and shows its
// transcript.
func (b *browser) followWithTranscript() {
	b.t.Helper()
	b.run("transcript", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="transcript"]`)))
	b.wait("the session shows", `document.getElementById('live').dataset.state === 'following' &&
	  document.getElementById('transcript-through').textContent !== ''`, 30*time.Second)
}

// readsFailed waits until the page has made the reads of each of whats
// (summary, transcript) that window.failNext made fail, and says that the
// read (of the one named, if one is) was refused.
func (b *browser) readsFailed(whats ...string) {
	b.t.Helper()
	cond := ""
	for _, w := range whats {
		cond += `window.failNext.` + w + ` === 0 && `
	}
	refused := "read was refused"
	if len(whats) == 1 {
		refused = "the " + whats[0] + " " + refused
	}
	b.wait("the failed read shows", cond+actionError+`.includes('`+refused+`')`, 30*time.Second)
}

// transcriptThrough is true while the page shows the transcript through
// sequence seq.
func transcriptThrough(seq uint64) string {
	return fmt.Sprintf(`document.getElementById('transcript-through').textContent === 'through sequence %d'`, seq)
}

// transcript answers the transcript of session id.
func (b *inProcess) transcript(t *testing.T, id string) api.SessionTranscript {
	t.Helper()
	tr, err := b.engine.Transcript(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestInspectorFirstStatusReadFails opens a session of 1,200 events whose
// first status read fails: the page says so, reads the status again and
// streams the session from its newest page, as when the read succeeds,
// not every event from the first; once the read succeeds its error no
// longer shows.
func TestInspectorFirstStatusReadFails(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "first-status-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	last := int(srv.emit(t, id, 1200))

	b.watchSession(srv.url, token, id, `window.failNext.summary = 1`)
	b.readsFailed("summary")
	b.wait("the session shows", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null &&
	  document.getElementById('live').dataset.state === 'following' && document.getElementById('status').dataset.lastSequence === '%d'`, last, last), 30*time.Second)

	var got struct {
		Streams []string `json:"streams"`
		Seqs    []int    `json:"seqs"`
		Error   string   `json:"error"`
	}
	b.eval(`({streams: window.reads.streams, error: `+actionError+`,
	  seqs: Array.from(document.querySelectorAll('#events tbody tr'), (e) => +e.dataset.seq)})`, &got)
	start := last - 500
	if want := fmt.Sprintf("/v1/sessions/%s/events?after=%d", id, start); len(got.Streams) != 1 || got.Streams[0] != want {
		t.Errorf("the page opened the event streams %q, want one, %q", got.Streams, want)
	}
	if len(got.Seqs) != 500 || got.Seqs[0] != start+1 || got.Seqs[len(got.Seqs)-1] != last {
		t.Errorf("the page shows %d events, #%d to #%d; want the newest 500, #%d to #%d", len(got.Seqs), got.Seqs[0], got.Seqs[len(got.Seqs)-1], start+1, last)
	}
	if got.Error != "" {
		t.Errorf("once the status was read, the page still says %q", got.Error)
	}
}

// TestInspectorReadErrorsClear: the reads of a session's status and of
// its transcript at the end of a turn fail, and the page says so; at the
// end of the next turn they succeed, and the error no longer shows.
func TestInspectorReadErrorsClear(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "read-errors-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	srv.emit(t, id, 2)

	b.watchSession(srv.url, token, id)
	b.followWithTranscript()

	var ok bool
	b.eval(`window.failNext = {summary: 1, transcript: 1}, true`, &ok)
	srv.emit(t, id, 2)
	b.readsFailed("summary", "transcript")

	last := srv.emit(t, id, 2)
	tr := srv.transcript(t, id)
	b.wait("the reads succeed", fmt.Sprintf(`document.getElementById('status').dataset.lastSequence === '%d' && `, last)+transcriptThrough(tr.ThroughSequence), 30*time.Second)
	var shown string
	b.eval(actionError, &shown)
	if shown != "" {
		t.Errorf("once the status and the transcript were read again, the page still says %q", shown)
	}
}

// TestInspectorTranscriptReadWhenShown: while the transcript tab is
// hidden, turn ends do not read the transcript; showing the tab reads it
// once, and while it shows each turn end reads it again.
func TestInspectorTranscriptReadWhenShown(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "transcript-shown-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	last := srv.emit(t, id, 600) // more than a page: the pager shows

	b.watchSession(srv.url, token, id)
	// The pager is updated after the records that end a turn, and after
	// any read of the transcript they start.
	settled := func(last uint64) {
		t.Helper()
		b.wait("the page takes in the turn", fmt.Sprintf(`document.getElementById('live').dataset.state === 'following' &&
		  document.getElementById('page-status').textContent.endsWith('#%d of %d')`, last, last), 30*time.Second)
	}
	reads := func() (n int) {
		t.Helper()
		b.eval(`window.reads.transcript`, &n)
		return n
	}
	showsTranscript := func(what string) {
		t.Helper()
		tr := srv.transcript(t, id)
		b.wait(what, transcriptThrough(tr.ThroughSequence)+fmt.Sprintf(` &&
		  document.querySelectorAll('#transcript .message').length === %d`, len(tr.Messages)), 30*time.Second)
	}
	tab := func(name string) {
		t.Helper()
		b.run("show "+name, chromedp.Click(chromedp.CSS(`.tabs button[data-tab="`+name+`"]`)))
	}

	settled(last)
	for range 3 {
		last = srv.emit(t, id, 1)
		settled(last)
	}
	if n := reads(); n != 0 {
		t.Errorf("with the transcript tab hidden, opening the session and three turns read the transcript %d times, want none", n)
	}

	tab("transcript")
	showsTranscript("the transcript shows")
	if n := reads(); n != 1 {
		t.Errorf("showing the transcript tab read the transcript %d times, want once", n)
	}
	last = srv.emit(t, id, 1)
	settled(last)
	showsTranscript("the transcript shows the new turn")
	shown := reads()

	tab("timeline")
	for range 2 {
		last = srv.emit(t, id, 1)
		settled(last)
	}
	if n := reads(); n != shown {
		t.Errorf("with the transcript tab hidden again, two turns read the transcript %d times, want none", n-shown)
	}
	tab("transcript")
	showsTranscript("the transcript shows the turns run while it was hidden")
	if n := reads(); n != shown+1 {
		t.Errorf("showing the transcript tab again read the transcript %d times, want once", n-shown)
	}
}

// failPageReads makes the page's next window.failPages reads of an events
// page (not the event stream) fail with 503.
const failPageReads = `(() => {
  window.failPages = 0;
  const f = window.fetch;
  window.fetch = (u, o) => {
    const stream = o && o.headers && o.headers.Accept === 'text/event-stream';
    if (String(u).includes('/events?') && !stream && window.failPages > 0) {
      window.failPages--;
      return Promise.resolve(new Response(JSON.stringify({code: 'unavailable', message: 'the page read was refused'}),
        {status: 503, headers: {'Content-Type': 'application/json'}}));
    }
    return f(u, o);
  };
  return true;
})()`

// TestInspectorPageReadErrorsClear: reading the oldest page of a session,
// and reading its earlier records for the environments tab, fail, and the
// page says so; each done again succeeds, and the error no longer shows.
func TestInspectorPageReadErrorsClear(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "page-errors-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	last := srv.emit(t, id, 600) // more than a page: the pager shows

	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("the session shows", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null &&
	  document.getElementById('live').dataset.state === 'following'`, last), 30*time.Second)
	b.eval(failPageReads, &ok)
	shown := func() (s string) {
		t.Helper()
		b.eval(actionError, &s)
		return s
	}

	b.eval(`window.failPages = 1, true`, &ok)
	b.run("oldest page", chromedp.Click(chromedp.CSS("#page-oldest")))
	b.wait("the failed read shows", actionError+`.includes('page read was refused')`, 30*time.Second)
	// The window shows the events it showed: the oldest page is read again.
	b.run("read again", chromedp.Click(chromedp.CSS("#page-oldest")))
	b.wait("the oldest page", `document.querySelector('#events tr[data-seq="1"]') !== null`, 30*time.Second)
	if s := shown(); s != "" {
		t.Errorf("once the oldest page was read, the page still says %q", s)
	}

	b.eval(`window.failPages = 1, true`, &ok)
	b.run("environments", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="environments"]`)))
	b.wait("the failed read shows", actionError+`.includes('page read was refused')`, 30*time.Second)
	b.eval(`document.getElementById('environments').tBodies[0].append(document.createElement('tr')), true`, &ok)
	b.run("timeline", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="timeline"]`)))
	b.run("environments again", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="environments"]`)))
	// The table is drawn afresh once the earlier records are folded.
	b.wait("the earlier records folded", `document.getElementById('environments').tBodies[0].rows.length === 0`, 30*time.Second)
	if s := shown(); s != "" {
		t.Errorf("once the environments were read, the page still says %q", s)
	}
}

// TestInspectorStatusReadRetried: the read of a session's status at the
// end of its last turn fails; no record follows to read it again, yet the
// page reads it again on its own, shows the status the turn left and no
// longer shows the error.
func TestInspectorStatusReadRetried(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "status-retry-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	srv.emit(t, id, 2)

	b.watchSession(srv.url, token, id)
	b.wait("the session shows", `document.getElementById('live').dataset.state === 'following' &&
	  document.getElementById('status').dataset.lastSequence !== undefined`, 30*time.Second)

	var ok bool
	b.eval(`window.failNext.summary = 1, true`, &ok)
	last := srv.emit(t, id, 2)
	b.readsFailed("summary")
	b.wait("the status is read again", fmt.Sprintf(`document.getElementById('status').dataset.lastSequence === '%d' && `+actionError+` === ''`, last), 30*time.Second)
}

// TestInspectorTranscriptReadRetried: while the transcript tab shows, the
// read of the transcript at the end of the session's last turn fails; no
// record follows to read it again, yet the page reads it again on its
// own, shows the transcript the turn left and no longer shows the error.
func TestInspectorTranscriptReadRetried(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "transcript-retry-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	srv.emit(t, id, 2)

	b.watchSession(srv.url, token, id)
	b.followWithTranscript()

	var ok bool
	b.eval(`window.failNext.transcript = 1, true`, &ok)
	srv.emit(t, id, 2)
	b.readsFailed("transcript")
	tr := srv.transcript(t, id)
	b.wait("the transcript is read again", transcriptThrough(tr.ThroughSequence)+` && `+actionError+` === ''`, 30*time.Second)
}
