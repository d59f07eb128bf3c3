package ui_test

import (
	"context"
	"testing"
	"time"

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

// TestInspectorStreamedTextGapWhileRunning: the event stream drops while a
// model call streams, so that a delta never reaches the page; while the
// call still runs, its row says where text is missing instead of showing
// the text after the hole as if it followed on.
func TestInspectorStreamedTextGapWhileRunning(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "gap-text-token"
	const heartbeat = 300 * time.Millisecond
	deltas := make(pacedModel)
	srv := serveWithModels(t, token, heartbeat, model.Providers{
		"scripted": func(model.Spec) (model.Client, error) { return deltas, nil },
	})
	proxy := newStallProxy(t, srv.url)
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

	b.login(proxy.url(), token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	const running = `#timeline li[data-kind="model_call"][data-outcome="running"]`
	b.wait("the model call runs", `document.querySelector('`+running+`') !== null && document.getElementById('live').dataset.state === 'following'`, 60*time.Second)
	streamed := `((document.querySelector('` + running + ` pre.stream[data-live]') || {}).textContent || '')`
	deltas <- "alpha "
	b.wait("the first delta", streamed+` === 'alpha '`, 30*time.Second)

	if n := proxy.stall(); n != 1 {
		t.Fatalf("stalled %d stream connections, want 1", n)
	}
	deltas <- "beta " // lost with the stalled connection
	b.wait("reconnect", `document.getElementById('stream-note').textContent.includes('reconnected')`, 30*time.Second)
	deltas <- "gamma"
	b.wait("the delta after the reconnection", streamed+`.endsWith('gamma')`, 30*time.Second)

	var parts []string
	b.eval(streamParts, &parts)
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
