package ui_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// holdSummaries makes the page hold back the answers to the summary
// requests of session id that it sends while window.holding is true
// (each request is sent at once: the answer is the session as it was
// then), until window.release() hands them over. window.held counts the
// held requests and window.heldRead is set once the page has taken in
// every released answer.
const holdSummaries = `((id) => {
  window.holding = false;
  window.held = 0;
  window.heldRead = false;
  const waiting = [];
  const f = window.fetch;
  window.fetch = (u, o) => {
    const p = f(u, o);
    if (!window.holding || String(u) !== '/v1/sessions/' + id) return p;
    window.held++;
    return new Promise((res) => waiting.push(() => res(p.then((r) => {
      const text = r.text.bind(r);
      r.text = () => text().then((t) => { setTimeout(() => { window.heldRead = true; }, 0); return t; });
      return r;
    }))));
  };
  window.release = () => { for (const go of waiting.splice(0)) go(); return true; };
  return true;
})`

// TestInspectorStatusNotOverwrittenByOlderAnswer: the session's summary
// is read again as its turn starts and as it ends; when the answer read
// as it started arrives last (a slow request), the page still shows the
// status the session has now, not the older one.
func TestInspectorStatusNotOverwrittenByOlderAnswer(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "status-order-token"
	deltas := make(pacedModel)
	srv := serveWithModels(t, token, 0, model.Providers{
		"scripted": func(model.Spec) (model.Client, error) { return deltas, nil },
	})
	id := srv.session(t)
	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("the page follows the session", `document.getElementById('live').dataset.state === 'following' && document.getElementById('status').textContent === 'idle'`, 30*time.Second)
	b.eval(holdSummaries+`('`+id+`')`, &ok)
	b.eval(`window.holding = true`, &ok)

	turn := make(chan error, 1)
	go func() {
		_, err := srv.engine.Send(context.Background(), id, api.UserInput{Message: "model"})
		turn <- err
	}()
	const running = `#timeline li[data-kind="model_call"][data-outcome="running"]`
	b.wait("the turn runs", `document.querySelector('`+running+`') !== null && window.held > 0`, 30*time.Second)
	b.eval(`window.holding = false`, &ok)
	close(deltas)
	if err := <-turn; err != nil {
		t.Fatalf("the turn: %v", err)
	}
	sum, err := srv.engine.Summary(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	// The summary read after the turn ended is shown.
	b.wait("the turn ended", `document.getElementById('status').textContent === 'idle' &&
	  document.getElementById('status').dataset.lastSequence === '`+strconv.FormatUint(sum.LastSequence, 10)+`'`, 30*time.Second)

	// The answer read while the turn ran arrives now.
	b.eval(`window.release()`, &ok)
	b.wait("the older answer is taken in", `window.heldRead`, 30*time.Second)
	var status string
	b.eval(`document.getElementById('status').textContent`, &status)
	if status != "idle" {
		t.Errorf("after an older summary answer arrived last, the page shows the session %q, want idle", status)
	}
}
