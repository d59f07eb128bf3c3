package ui_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// streamParts answers, of the running model call's row, its streamed text
// in pieces: the text between the marks of text it missed, each mark as
// "[gap]".
const streamParts = `(() => {
  const pre = document.querySelector('#timeline li[data-kind="model_call"][data-outcome="running"] pre.stream[data-live]');
  if (!pre) return [];
  const out = [];
  for (const n of pre.childNodes) out.push(n.classList && n.classList.contains('stream-gap') ? '[gap]' : n.textContent);
  return out;
})()`

// runningCall selects the row of the running model call.
const runningCall = `#timeline li[data-kind="model_call"][data-outcome="running"]`

// runningText is the text the running model call's row shows.
const runningText = `((document.querySelector('` + runningCall + ` pre.stream[data-live]') || {}).textContent || '')`

// liveCall is a model call, in a turn run in the background, that streams
// the deltas sent on deltas, shown by the inspector through a proxy.
type liveCall struct {
	b      *browser
	proxy  *stallProxy
	deltas pacedModel
	end    func() // closes deltas: the call answers what they streamed
}

// liveSetup says how startLiveCall serves Brain.
type liveSetup struct {
	heartbeat time.Duration                                 // of idle event streams
	listen    func(net.Listener) net.Listener               // the server's listener (nil: the test server's)
	proxy     func(t *testing.T, target string) *stallProxy // nil: newStallProxy
}

// startLiveCall starts Brain as setup says, with a model streaming the
// deltas the test sends, runs a turn of a new session in the background
// (it must succeed once the test ends the call, or the test ends), and
// opens the inspector, logged in with token, through the proxy, until the
// model call shows running and the page follows the session.
func startLiveCall(t *testing.T, token string, setup liveSetup) *liveCall {
	t.Helper()
	c := &liveCall{b: newBrowser(t, 120*time.Second), deltas: make(pacedModel)}
	srv := serveOn(t, setup.listen, token, setup.heartbeat, model.Providers{
		"scripted": func(model.Spec) (model.Client, error) { return c.deltas, nil },
	})
	if setup.proxy == nil {
		setup.proxy = newStallProxy
	}
	c.proxy = setup.proxy(t, srv.url)
	id := srv.session(t)
	turn := make(chan error, 1)
	go func() {
		_, err := srv.engine.Send(context.Background(), id, api.UserInput{Message: "model"})
		turn <- err
	}()
	var once sync.Once
	c.end = func() { once.Do(func() { close(c.deltas) }) }
	t.Cleanup(func() {
		c.end()
		if err := <-turn; err != nil {
			t.Errorf("the streaming turn: %v", err)
		}
	})

	c.b.login(c.proxy.url(), token)
	var ok bool
	c.b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	c.b.wait("the model call runs", `document.querySelector('`+runningCall+`') !== null && document.getElementById('live').dataset.state === 'following'`, 60*time.Second)
	return c
}

// loseDeltaToStall streams "alpha ", stalls the event stream, streams
// "beta " (lost with the stalled connection), waits until the page has
// reconnected and streams "gamma", until the page shows it.
func (c *liveCall) loseDeltaToStall(t *testing.T) {
	t.Helper()
	c.deltas <- "alpha "
	c.b.wait("the first delta", runningText+` === 'alpha '`, 30*time.Second)

	if n := c.proxy.stall(); n != 1 {
		t.Fatalf("stalled %d stream connections, want 1", n)
	}
	c.deltas <- "beta " // lost with the stalled connection
	c.b.wait("reconnect", `document.getElementById('stream-note').textContent.includes('reconnected')`, 30*time.Second)
	c.deltas <- "gamma"
	c.b.wait("the delta after the reconnection", runningText+`.endsWith('gamma')`, 30*time.Second)
}

// TestInspectorStreamedTextGapWhileRunning: the event stream drops while a
// model call streams, so that a delta never reaches the page; while the
// call still runs, its row says where text is missing instead of showing
// the text after the hole as if it followed on.
func TestInspectorStreamedTextGapWhileRunning(t *testing.T) {
	c := startLiveCall(t, "gap-text-token", liveSetup{heartbeat: 300 * time.Millisecond})
	c.loseDeltaToStall(t)

	var parts []string
	c.b.eval(streamParts, &parts)
	if len(parts) != 3 || parts[0] != "alpha " || parts[1] != "[gap]" || parts[2] != "gamma" {
		t.Errorf("the running model call shows %q, want \"alpha \", a mark of missing text, then \"gamma\"", parts)
	}
}

// TestInspectorStreamedTextGapAtStart: a model call has streamed text
// before the page opens its session; the row of the running call says
// that the text before what it shows is missing.
func TestInspectorStreamedTextGapAtStart(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "gap-start-token"
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
		close(deltas)
		if err := <-turn; err != nil {
			t.Errorf("the streaming turn: %v", err)
		}
	}()
	// The model takes the second delta once it has handed on the first.
	deltas <- "alpha "
	deltas <- "beta "

	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	const running = `#timeline li[data-kind="model_call"][data-outcome="running"]`
	b.wait("the model call runs", `document.querySelector('`+running+`') !== null && document.getElementById('live').dataset.state === 'following'`, 60*time.Second)
	deltas <- "gamma"
	streamed := `((document.querySelector('` + running + ` pre.stream[data-live]') || {}).textContent || '')`
	b.wait("the delta after the page opened", streamed+`.endsWith('gamma')`, 30*time.Second)

	var parts []string
	b.eval(streamParts, &parts)
	// The second delta reaches the page if the page subscribed before it
	// was sent.
	if len(parts) != 2 || parts[0] != "[gap]" || (parts[1] != "gamma" && parts[1] != "beta gamma") {
		t.Errorf("the running model call shows %q, want a mark of missing text, then \"gamma\" (or \"beta gamma\")", parts)
	}
}

// TestInspectorStreamedTextDroppedForSlowReader: the page reads the event
// stream more slowly than a model call streams, and the server, which
// does not wait for a slow reader, drops deltas it cannot queue while the
// connection stays open. While the call still runs, its row says where
// text is missing: every stretch of text it shows between the marks is
// text the call streamed in one piece. The page used to show the deltas
// that came on either side of the hole as if they followed on.
func TestInspectorStreamedTextDroppedForSlowReader(t *testing.T) {
	c := startLiveCall(t, "slow-reader-token", liveSetup{
		listen: smallSendBuffers(8 << 10),
		proxy: func(t *testing.T, target string) *stallProxy {
			return newPacedProxy(t, target, 2<<10, 10*time.Millisecond)
		},
	})
	// Each delta is numbered, so that text joined across a hole is not
	// text the call streamed.
	const burst = 6000
	var sent strings.Builder
	for i := range burst {
		d := fmt.Sprintf("<%05d>%s\n", i, strings.Repeat("x", 92))
		sent.WriteString(d)
		c.deltas <- d
	}
	// A delta sent once the page has caught up reaches it: the deltas sent
	// while the server still queues frames for the page may be dropped.
	const mark = "<omega>\n"
	for tries := 0; ; tries++ {
		if tries == 30 {
			t.Fatalf("none of %d deltas sent after the others reached the page", tries)
		}
		sent.WriteString(mark)
		c.deltas <- mark
		err := chromedp.Do(c.b.ctx, void(chromedp.Poll[bool](runningText+`.endsWith('<omega>\n')`,
			chromedp.WithPollingTimeout(time.Second), chromedp.WithPollingInterval(10*time.Millisecond))))
		if err == nil {
			break
		}
	}

	var parts []string
	c.b.eval(streamParts, &parts)
	var stretches []string // the text between the marks
	var text strings.Builder
	stretch := ""
	for _, p := range parts {
		if p == "[gap]" {
			stretches = append(stretches, stretch)
			stretch = ""
			continue
		}
		stretch += p
		text.WriteString(p)
	}
	stretches = append(stretches, stretch)
	if text.Len() >= sent.Len() {
		t.Fatalf("the page shows all %d characters streamed: no delta was dropped, the reader was not slow enough", sent.Len())
	}
	t.Logf("the page shows %d of the %d characters streamed, in %d stretches", text.Len(), sent.Len(), len(stretches))
	if len(stretches) < 2 {
		t.Errorf("the running model call shows %d of the %d characters streamed with no mark of missing text", text.Len(), sent.Len())
	}
	all := sent.String()
	at := 0
	for i, s := range stretches {
		k := strings.Index(all[at:], s)
		if k < 0 {
			t.Errorf("stretch %d of the running call's text (%d characters, from %.20q) is not text the call streamed in one piece after the stretch before", i, len(s), s)
			break
		}
		at += k + len(s)
	}
}
