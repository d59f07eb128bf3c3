package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestInspectorWithoutAuthentication opens the inspector of a Brain that
// serves without a token (brain serve --no-auth): the page shows the
// sessions at once instead of asking for a token there is none of, and
// offers no token to forget.
func TestInspectorWithoutAuthentication(t *testing.T) {
	b := newBrowser(t, 60*time.Second)
	srv := serveInProcess(t, "", 0)
	id := srv.session(t)
	row := fmt.Sprintf(`#sessions tr[data-session=%q] a`, id)
	b.run("open the page", chromedp.Navigate(srv.url+"/ui/"))
	b.wait("the session list", `document.querySelector('`+row+`') !== null && !document.getElementById('list').hidden`, 20*time.Second)
	var got struct {
		Login  bool `json:"login"`
		Forget bool `json:"forget"`
	}
	b.eval(`({login: !document.getElementById('login').hidden, forget: !document.getElementById('forget').hidden})`, &got)
	if got.Login || got.Forget {
		t.Errorf("without authentication the page shows the login form: %v, the Forget token button: %v", got.Login, got.Forget)
	}
	// A session opens and follows as it does with a token.
	b.run("open the session", chromedp.Click(chromedp.CSS(row)))
	b.wait("follow the session", `document.getElementById('live').dataset.state === 'following' && document.querySelector('#timeline li[data-kind="session_creation"]') !== null`, 20*time.Second)
}
