package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/api"
)

// messageBox reads the text in the message box.
const messageBox = `document.getElementById('message').value`

// openSession shows session id and waits until it follows it.
func (b *browser) openSession(id string) {
	b.t.Helper()
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open "+id, `document.getElementById('sid').textContent === '`+id+`' &&
	  document.getElementById('live').dataset.state === 'following'`, 30*time.Second)
}

// TestInspectorDraftStaysWithItsSession: text typed in the message box
// of one session does not show in, and is not sent to, another session
// opened next; it shows again when its session is opened again.
func TestInspectorDraftStaysWithItsSession(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "draft-token"
	srv := serveInProcess(t, token, 0)
	a, c := srv.session(t), srv.session(t)
	srv.emit(t, a, 1)
	srv.emit(t, c, 1)

	b.login(srv.url, token)
	b.openSession(a)
	b.run("type a draft", chromedp.SendKeys(chromedp.CSS("#message"), "7"))
	b.openSession(c)
	var box string
	b.eval(messageBox, &box)
	if box != "" {
		t.Errorf("the message box of session %s shows %q, the text typed for session %s", c, box, a)
	}
	// Enter in the other session's box sends nothing it shows.
	b.run("enter", chromedp.SendKeys(chromedp.CSS("#message"), "\r"))
	b.openSession(a)
	b.eval(messageBox, &box)
	if box != "7" {
		t.Errorf("back on session %s the message box shows %q, want its draft %q", a, box, "7")
	}
	if n := srv.turns(t, c); n != 1 {
		t.Errorf("session %s ran %d turns, want the one it ran before it was opened", c, n)
	}
}

// turns answers how many turns session id has started.
func (b *inProcess) turns(t *testing.T, id string) int {
	t.Helper()
	n := 0
	for after := uint64(0); ; {
		page, err := b.engine.Events(t.Context(), id, after)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			return n
		}
		for _, ev := range page.Events {
			if ev.EventType == api.KindTurnStarted {
				n++
			}
		}
		after = page.NextCursor
	}
}

// TestInspectorActionAnsweredAfterLeaving: a message and a cancel sent
// to a session are answered after the page has left it for another one.
// The answers do not clear what was typed for the other session, nor show
// their error there; the error of the cancel that failed shows once the
// session it was sent to is opened again.
func TestInspectorActionAnsweredAfterLeaving(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "answered-token"
	srv := serveInProcess(t, token, 0)
	proxy := newHoldProxy(t, srv.url)
	a, c := srv.session(t), srv.session(t)
	b.login(proxy.url, token)

	releaseSend, send := proxy.hold(post("/v1/sessions/"+a+"/messages"), false)
	releaseCancel, cancel := proxy.hold(post("/v1/sessions/"+a+"/cancel"), true)
	b.openSession(a)
	b.run("send and cancel", chromedp.SendKeys(chromedp.CSS("#message"), "2\r"), chromedp.Click(chromedp.CSS("#cancel")))
	send.waitHeld(t)
	cancel.waitHeld(t)
	b.openSession(c)
	b.run("type for c", chromedp.SendKeys(chromedp.CSS("#message"), "for c"))
	releaseSend()
	releaseCancel()
	send.waitAnswered(t)
	cancel.waitAnswered(t)
	// The page takes the answers within moments; none may change what c
	// shows.
	b.steady("session "+c+" keeps its message box and shows no error", messageBox+` === 'for c' && `+actionError+` === ''`, 2*time.Second)

	b.openSession(a)
	b.wait("the failed cancel shows on its session", actionError+`.includes('cancel') && `+actionError+`.includes('the request was refused')`, 30*time.Second)
	var box string
	b.eval(messageBox, &box)
	if box != "" {
		t.Errorf("back on session %s after its message was sent, the message box shows %q", a, box)
	}
}

// steady fails unless expr stays true for d.
func (b *browser) steady(what, expr string, d time.Duration) {
	b.t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var ok bool
		b.eval(expr, &ok)
		if !ok {
			var box, shown string
			b.eval(messageBox, &box)
			b.eval(actionError, &shown)
			b.t.Fatalf("%s: no longer so (message box %q, error %q)", what, box, shown)
		}
	}
}

// TestInspectorMessageSentAgainIsTakenOnce: a message whose answer was
// lost (Brain took it, the answer did not come back) and that the user
// sends again is the same request under the same Idempotency-Key: Brain
// runs it once.
func TestInspectorMessageSentAgainIsTakenOnce(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "sent-again-token"
	srv := serveInProcess(t, token, 0)
	proxy := newHoldProxy(t, srv.url)
	id := srv.session(t)
	b.login(proxy.url, token)

	lost := proxy.loseFirst(post("/v1/sessions/" + id + "/messages"))
	b.openSession(id)
	b.run("send", chromedp.SendKeys(chromedp.CSS("#message"), "1\r"))
	lost.waitHeld(t)
	b.wait("the failure shows", actionError+` !== '' && !document.getElementById('send').disabled`, 30*time.Second)
	b.run("send again", chromedp.SendKeys(chromedp.CSS("#message"), "\r"))
	b.wait("the message is sent", messageBox+` === '' && `+actionError+` === ''`, 30*time.Second)
	srv.settle(t, id)
	if n := srv.turns(t, id); n != 1 {
		t.Errorf("the message was run as %d turns, want 1", n)
	}
}

// TestInspectorMessageSentOnce: Enter pressed again while a message is
// being sent does not send it a second time.
func TestInspectorMessageSentOnce(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "sent-once-token"
	srv := serveInProcess(t, token, 0)
	proxy := newHoldProxy(t, srv.url)
	id := srv.session(t)
	b.login(proxy.url, token)

	release, send := proxy.hold(post("/v1/sessions/"+id+"/messages"), false)
	b.openSession(id)
	b.run("send", chromedp.SendKeys(chromedp.CSS("#message"), "1\r"))
	send.waitHeld(t)
	b.run("enter again", chromedp.SendKeys(chromedp.CSS("#message"), "\r"))
	release()
	send.waitAnswered(t)
	b.wait("the message is sent", messageBox+` === '' && !document.getElementById('send').disabled`, 30*time.Second)
	srv.settle(t, id)
	if n := srv.turns(t, id); n != 1 {
		t.Errorf("the message was sent as %d turns, want 1", n)
	}
}

// settle waits until session id is idle and its last sequence holds
// still between two reads.
func (srv *inProcess) settle(t *testing.T, id string) {
	t.Helper()
	last := uint64(0)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		sum, err := srv.engine.Summary(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Status == "idle" && sum.LastSequence > 0 && sum.LastSequence == last {
			return
		}
		last = sum.LastSequence
		if time.Now().After(deadline) {
			t.Fatal("the session does not settle")
		}
	}
}
