package ui_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestInspectorLoginUnavailableKeepsTheToken: the server cannot check a
// token (it answers 503 while it starts or drains). The page says so and
// keeps what was typed in the field, so that logging in again is one
// press, not a token pasted again; a token refused (401) is not kept.
func TestInspectorLoginUnavailableKeepsTheToken(t *testing.T) {
	b := newBrowser(t, 60*time.Second)
	const token = "login-unavailable-token"
	srv := serveInProcess(t, token, 0)
	proxy := newHoldProxy(t, srv.url)
	b.run("open the page", chromedp.Navigate(proxy.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#login-form")))

	listRead := func(r *http.Request) bool { return r.Method == http.MethodGet && r.URL.Path == "/v1/sessions" }
	release, list := proxy.hold(listRead, true)
	b.run("log in while the server is unavailable",
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
	list.waitHeld(t)
	release()
	b.wait("the refusal shows", `document.getElementById('login-error').textContent !== ''`, 20*time.Second)
	var got struct {
		Field  string `json:"field"`
		Stored any    `json:"stored"`
		Login  bool   `json:"login"`
	}
	b.eval(`({field: document.getElementById('token').value, stored: sessionStorage.getItem('brain.inspector.token'), login: !document.getElementById('login').hidden})`, &got)
	if got.Field != token || got.Stored != nil || !got.Login {
		t.Fatalf("after a 503 the field holds %q, the page keeps %v and shows the login form: %v; want the token in the field, nothing kept, the form", got.Field, got.Stored, got.Login)
	}

	// The server is back: the list reads pass.
	pass, _ := proxy.hold(listRead, false)
	pass()
	b.run("log in again", chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
	b.wait("the session list shows", `!document.getElementById('list').hidden`, 20*time.Second)

	b.run("forget the token", chromedp.Click(chromedp.CSS("#forget")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	b.run("log in with a wrong token",
		chromedp.SendKeys(chromedp.CSS("#token"), "wrong"),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
	b.wait("the refusal shows", `document.getElementById('login-error').textContent.includes('refused')`, 20*time.Second)
	var field string
	b.eval(`document.getElementById('token').value`, &field)
	if field != "" {
		t.Errorf("after a 401 the field holds %q, want it empty", field)
	}
}
