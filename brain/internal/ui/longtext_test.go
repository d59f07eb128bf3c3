package ui_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// countWritten makes the page count, in window.written, the characters it
// writes into the timeline: the text of every node added to it, and the
// whole text of every text node changed in place (the browser copies it
// to change it).
const countWritten = `(() => {
  window.written = 0;
  const size = (n) => n.nodeType === Node.TEXT_NODE ? n.length : (n.textContent || '').length;
  new MutationObserver((ms) => {
    for (const m of ms) {
      if (m.type === 'characterData') window.written += m.target.length;
      else for (const n of m.addedNodes) window.written += size(n);
    }
  }).observe(document.getElementById('timeline'), { childList: true, characterData: true, subtree: true });
  return true;
})()`

// TestInspectorLongStreamedText: a model call streams about a million
// characters in 4,000 deltas. The call's row shows exactly the text
// streamed, in order and once, and the work of showing a delta does not
// grow with the text shown before it:
//
//   - the page writes each delta into the page once: the characters it
//     writes stay within a few times the text. Appending each delta to the
//     whole text streamed so far (textContent +=) wrote it again with
//     every delta, about 2,000 times the text here;
//   - the text is held in parts of a bounded size (STREAM_LINE, 16,384
//     characters), so that the browser lays out again only the last part
//     as text arrives: with all the text in one block, laying out a burst
//     of deltas near the end of the text took about five times as long as
//     near its start (twenty times with textContent +=).
func TestInspectorLongStreamedText(t *testing.T) {
	const (
		deltaCount = 4000
		deltaSize  = 250
		burst      = 20 // deltas sent before waiting for the page to show them
		total      = deltaCount * deltaSize
		maxWritten = 4 * total
		maxPart    = 16384 // STREAM_LINE in app.js
	)
	b, deltas, end := streamingCall(t, "long-text-token")
	var ok bool
	b.eval(countWritten, &ok)
	streamed := `((document.querySelector('` + modelCallRow + ` pre.stream[data-live]') || {}).textContent || '')`

	st := &streamer{b: b, deltas: deltas, streamed: streamed, size: deltaSize, burst: burst, limit: total}
	start := time.Now()
	st.send(deltaCount)
	t.Logf("%d characters in %d deltas showed in %v", total, deltaCount, time.Since(start))
	want := st.text.String()
	var got string
	b.eval(streamed, &got)
	if got != want {
		t.Errorf("the model call shows %d characters, want the %d streamed; they differ from character %d", len(got), len(want), differAt(got, want))
	}
	var parts struct {
		Count   int `json:"count"`
		Largest int `json:"largest"`
		Loose   int `json:"loose"`
	}
	b.eval(`(() => {
  const pre = document.querySelector('`+modelCallRow+` pre.stream[data-live]');
  const ps = [...pre.children];
  return {count: ps.length, largest: Math.max(0, ...ps.map((p) => p.textContent.length)),
    loose: [...pre.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).length};
})()`, &parts)
	if parts.Largest > maxPart || parts.Loose != 0 || parts.Count < total/maxPart {
		t.Errorf("the text shows in %d parts, the largest of %d characters, with %d text nodes outside them; want parts of at most %d characters holding all the text",
			parts.Count, parts.Largest, parts.Loose, maxPart)
	}
	var written int
	b.eval(`window.written`, &written)
	t.Logf("the page wrote %d characters into the timeline for %d streamed", written, total)
	if written > maxWritten {
		t.Errorf("the page wrote %d characters into the timeline for %d characters streamed in %d deltas, want at most %d", written, total, deltaCount, maxWritten)
	}

	end()
	b.wait("the model call ends", `document.querySelector('`+modelCallRow+`[data-outcome="ok"]') !== null`, 60*time.Second)
	b.eval(streamed, &got)
	if got != want {
		t.Errorf("once the call ended its row shows %d characters, want the %d streamed", len(got), len(want))
	}
}

// modelCallRow selects the row of the model call of a streaming turn.
const modelCallRow = `#timeline li[data-kind="model_call"]`

// streamingCall starts Brain with a model streaming the deltas sent on
// the pacedModel it answers, runs a turn on a session of its, and opens
// the inspector (logged in with token) on that session until the model
// call shows running and the page follows the session. end closes the
// model's stream; the test's end waits for the turn, which must succeed.
func streamingCall(t *testing.T, token string) (b *browser, deltas pacedModel, end func()) {
	t.Helper()
	b = newBrowser(t, 180*time.Second)
	deltas = make(pacedModel)
	srv := serveWithModels(t, token, 0, model.Providers{
		"scripted": func(model.Spec) (model.Client, error) { return deltas, nil },
	})
	id := srv.session(t)
	turn := make(chan error, 1)
	go func() {
		_, err := srv.engine.Send(context.Background(), id, api.UserInput{Message: "model"})
		turn <- err
	}()
	var once sync.Once
	end = func() { once.Do(func() { close(deltas) }) }
	t.Cleanup(func() {
		end()
		if err := <-turn; err != nil {
			t.Errorf("the streaming turn: %v", err)
		}
	})
	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("the model call runs", `document.querySelector('`+modelCallRow+`[data-outcome="running"]') !== null && document.getElementById('live').dataset.state === 'following'`, 60*time.Second)
	return b, deltas, end
}

// streamer streams deltas of size characters to a model call shown on
// the page. Each delta says where it belongs, so that a delta shown twice,
// out of order or not at all shows in the text.
type streamer struct {
	b        *browser
	deltas   pacedModel
	streamed string // the expression of the text the page shows
	size     int
	burst    int // deltas sent before waiting for the page to show them
	limit    int // the most the page shows of the text

	text strings.Builder // the text streamed
	sent int             // deltas sent
}

// send streams deltas up to the nth and waits after each burst until the
// page shows the text streamed so far, or limit characters of it. The page
// reads the deltas as fast as they come: waiting for them keeps the server
// from dropping live frames it cannot queue.
func (s *streamer) send(n int) {
	s.b.t.Helper()
	for ; s.sent < n; s.sent++ {
		i := s.sent
		d := fmt.Sprintf("%05d <b>&amp;", i)
		d += strings.Repeat(string(rune('a'+i%26)), s.size-len(d)-1) + "\n"
		s.text.WriteString(d)
		s.deltas <- d
		if (i+1)%s.burst != 0 && i != n-1 {
			continue
		}
		s.b.wait(fmt.Sprintf("delta %d", i), fmt.Sprintf(`%s.length >= %d`, s.streamed, min(s.text.Len(), s.limit)), 60*time.Second)
	}
}

// differAt answers the index of the first character where a and b differ.
func differAt(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// TestInspectorStreamedTextPastItsBound: a model call streams more text
// than the page keeps while the call runs (LIVE_TEXT, 1 MiB). The row
// shows the text up to the bound and says that the rest is not shown yet;
// once the call has ended, it shows the whole answer and no longer says
// so. The page used to stop showing the streamed text at the bound
// without a word, as if the model had stopped.
func TestInspectorStreamedTextPastItsBound(t *testing.T) {
	const (
		liveText   = 1 << 20
		deltaSize  = 4096
		deltaCount = liveText/deltaSize + 4
	)
	b, deltas, end := streamingCall(t, "bound-text-token")
	streamed := `((document.querySelector('` + modelCallRow + ` pre.stream[data-live]') || {}).textContent || '')`
	note := `((document.querySelector('` + modelCallRow + ` .stream-cut') || {}).textContent || '')`

	st := &streamer{b: b, deltas: deltas, streamed: streamed, size: deltaSize, burst: 32, limit: liveText}
	st.send(deltaCount)
	want := st.text.String()
	b.wait("the note", note+` !== ''`, 30*time.Second)
	var got struct {
		Text string `json:"text"`
		Note string `json:"note"`
	}
	b.eval(`({text: `+streamed+`, note: `+note+`})`, &got)
	if got.Text != want[:liveText] {
		t.Errorf("the running call shows %d characters, want the first %d of the %d streamed; they differ from character %d",
			len(got.Text), liveText, len(want), differAt(got.Text, want))
	}
	if !strings.Contains(got.Note, fmt.Sprint(liveText)) {
		t.Errorf("the running call says %q, want that only its first %d characters show", got.Note, liveText)
	}

	end()
	b.wait("the model call ends", `document.querySelector('`+modelCallRow+`[data-outcome="ok"]') !== null`, 60*time.Second)
	b.eval(`({text: `+streamed+`, note: `+note+`})`, &got)
	if got.Text != want || got.Note != "" {
		t.Errorf("the ended call shows %d characters and the note %q, want the %d it answered and no note", len(got.Text), got.Note, len(want))
	}
}

// TestInspectorStreamedTextPastItsBoundFails: a model call streams more
// text than the page keeps while the call runs, and then fails (its turn
// is cancelled). The row no longer says that its answer will show in full
// once it ends: it has ended, and there is no answer to show.
func TestInspectorStreamedTextPastItsBoundFails(t *testing.T) {
	const (
		liveText   = 1 << 20
		deltaSize  = 4096
		deltaCount = liveText/deltaSize + 4
	)
	const token = "bound-fail-token"
	b := newBrowser(t, 180*time.Second)
	deltas := make(pacedModel)
	srv := serveWithModels(t, token, 0, model.Providers{
		"scripted": func(model.Spec) (model.Client, error) { return deltas, nil },
	})
	id := srv.session(t)
	turn := make(chan error, 1)
	go func() {
		_, err := srv.engine.Send(context.Background(), id, api.UserInput{Message: "model"})
		turn <- err
	}()
	defer func() {
		if err := srv.engine.Interrupt(context.Background(), id); err != nil {
			t.Errorf("interrupt: %v", err)
		}
		<-turn
	}()
	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("the model call runs", `document.querySelector('`+modelCallRow+`[data-outcome="running"]') !== null && document.getElementById('live').dataset.state === 'following'`, 60*time.Second)
	streamed := `((document.querySelector('` + modelCallRow + ` pre.stream[data-live]') || {}).textContent || '')`
	note := `((document.querySelector('` + modelCallRow + ` .stream-cut') || {}).textContent || '')`
	st := &streamer{b: b, deltas: deltas, streamed: streamed, size: deltaSize, burst: 32, limit: liveText}
	st.send(deltaCount)
	b.wait("the note", note+` !== ''`, 30*time.Second)

	if err := srv.engine.Interrupt(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	b.wait("the model call fails", `document.querySelector('`+modelCallRow+`[data-outcome="failed"]') !== null`, 60*time.Second)
	var got string
	b.eval(note, &got)
	if strings.Contains(got, "once it ends") || !strings.Contains(got, "failed") {
		t.Errorf("the failed call says %q, want that it failed, not that its answer shows once it ends", got)
	}
}
