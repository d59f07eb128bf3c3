package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// pacedModel streams the deltas the test sends on its channel, and
// answers their text once the channel is closed.
type pacedModel chan string

func (m pacedModel) Call(ctx context.Context, _ model.Request, onDelta func(model.Delta)) (model.Result, error) {
	var text strings.Builder
	for {
		select {
		case <-ctx.Done():
			return model.Result{}, context.Cause(ctx)
		case d, ok := <-m:
			if !ok {
				return model.Result{Message: api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{api.TextBlock(text.String())}},
					StopReason: api.StopEndTurn}, nil
			}
			text.WriteString(d)
			if onDelta != nil {
				onDelta(model.Delta{Text: d})
			}
		}
	}
}

// TestInspectorLiveTextAfterPagingBack: a model call streams while an
// older page of its session is shown; back at the newest events, the
// call's row shows all the text it streamed, from its first delta.
func TestInspectorLiveTextAfterPagingBack(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "live-text-token"
	deltas := make(pacedModel)
	srv := serveWithModels(t, token, 0, model.Providers{
		"scripted": func(model.Spec) (model.Client, error) { return deltas, nil },
	})
	id := srv.session(t)
	srv.emit(t, id, 600) // more than a page: the pager shows
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

	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	const running = `#timeline li[data-kind="model_call"][data-outcome="running"]`
	b.wait("the model call runs", `document.querySelector('`+running+`') !== null && document.getElementById('live').dataset.state === 'following'`, 60*time.Second)
	streamed := func() string {
		return `((document.querySelector('` + running + ` pre.stream[data-live]') || {}).textContent || '')`
	}
	deltas <- "alpha "
	b.wait("the first delta", streamed()+` === 'alpha '`, 30*time.Second)

	b.run("older page", chromedp.Click(chromedp.CSS("#page-older")))
	b.wait("older page", `document.querySelector('`+running+`') === null && !document.getElementById('page-newest').disabled`, 30*time.Second)
	deltas <- "beta "
	// The delta reaches the page while the older page is shown; nothing of
	// it shows there.
	time.Sleep(500 * time.Millisecond)
	b.run("newest page", chromedp.Click(chromedp.CSS("#page-newest")))
	b.wait("newest page", `document.querySelector('`+running+`') !== null`, 30*time.Second)
	deltas <- "gamma"
	b.wait("the call's text", streamed()+`.endsWith('gamma')`, 30*time.Second)
	var got string
	b.eval(streamed(), &got)
	if want := "alpha beta gamma"; got != want {
		t.Errorf("back at the newest events the running model call shows %q, want %q", got, want)
	}
	var rows int
	b.eval(`document.querySelectorAll('`+running+` pre.stream').length`, &rows)
	if rows != 1 {
		t.Errorf("the running model call shows %d streamed texts, want 1", rows)
	}
}

// TestInspectorStreamedTextAcrossReconnect: the event stream of a session
// drops while its model call streams, so that a delta never reaches the
// page; the page reconnects and shows the deltas that follow. Once the
// call has ended, its row shows the text the call answered, without the
// hole the lost delta left.
func TestInspectorStreamedTextAcrossReconnect(t *testing.T) {
	c := startLiveCall(t, "reconnect-text-token", liveSetup{heartbeat: 300 * time.Millisecond})
	c.loseDeltaToStall(t)

	c.end()
	c.b.wait("the model call ends", `document.querySelector('`+modelCallRow+`[data-outcome="ok"]') !== null`, 30*time.Second)
	// A frame passes, so that text still waiting to be written shows.
	c.b.run("the next frame", void(chromedp.Evaluate[bool](`new Promise((res) => requestAnimationFrame(() => res(true)))`, chromedp.EvalAwaitPromise)))
	var got string
	c.b.eval(`((document.querySelector('`+modelCallRow+` pre.stream[data-live]') || {}).textContent || '')`, &got)
	if want := "alpha beta gamma"; got != want {
		t.Errorf("the ended model call shows %q, want the text it answered, %q", got, want)
	}
}
