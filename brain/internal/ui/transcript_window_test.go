package ui_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// transcriptMeter forwards requests to a Brain and counts, of the
// transcript reads among them, the query of each and the bytes of the
// answers' bodies.
type transcriptMeter struct {
	url string

	mu      sync.Mutex
	queries []string
	bytes   int64
}

func newTranscriptMeter(t *testing.T, target string) *transcriptMeter {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	m := &transcriptMeter{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0) // requests the page gives up
	rp.ModifyResponse = func(resp *http.Response) error {
		if strings.HasSuffix(resp.Request.URL.Path, "/transcript") {
			m.mu.Lock()
			m.queries = append(m.queries, resp.Request.URL.RawQuery)
			m.mu.Unlock()
			resp.Body = &countedBody{ReadCloser: resp.Body, m: m}
		}
		return nil
	}
	hs := httptest.NewServer(rp)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	m.url = hs.URL
	return m
}

// read answers the queries of the transcript reads so far and the bytes
// their answers sent.
func (m *transcriptMeter) read() ([]string, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.queries...), m.bytes
}

type countedBody struct {
	io.ReadCloser
	m *transcriptMeter
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.m.mu.Lock()
	c.m.bytes += int64(n)
	c.m.mu.Unlock()
	return n, err
}

// TestInspectorTranscriptReadsOnlyItsWindow opens the transcript of a
// session of 20,000 messages of a kilobyte each: the page reads the
// messages it shows, not the 20 MB of the whole transcript, and reads
// earlier ones when asked. A long block the operator asked to see whole
// stays whole when a turn adds to the transcript.
func TestInspectorTranscriptReadsOnlyItsWindow(t *testing.T) {
	b := newBrowser(t, 240*time.Second)
	const token = "window-token"
	srv := serveOn(t, nil, token, 0, nil, func(c *session.Config) { c.Loops = nil })
	meter := newTranscriptMeter(t, srv.url)

	const opening = 20000
	const long = opening - 5 // the message whose text is longer than a block shows
	const longLength = 100000
	pad := strings.Repeat("x", 1000)
	msgs := make([]api.Message, opening)
	var whole int64
	for i := range msgs {
		text := fmt.Sprintf("opening message %d %s", i, pad)
		if i == long {
			text = fmt.Sprintf("long message %d ", i)
			text += strings.Repeat("y", longLength-len(text))
		}
		msgs[i] = api.UserMessage(api.UserInput{Message: text})
		whole += int64(len(text))
	}
	id := session.NewSessionID()
	if _, err := srv.engine.Create(context.Background(), id, api.CreateSessionRequest{
		Model: api.ModelConfig{Provider: "scripted", Name: "m"}, Transcript: msgs,
	}); err != nil {
		t.Fatal(err)
	}

	b.login(meter.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open the session", `document.getElementById('live').dataset.state === 'following'`, 60*time.Second)
	b.run("transcript tab", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="transcript"]`)))
	newest := fmt.Sprintf("opening message %d ", opening-1)
	b.wait("the newest message", fmt.Sprintf(`(() => { const m = document.querySelectorAll('#transcript .message pre');
	  return m.length > 0 && m[m.length - 1].textContent.startsWith(%q); })()`, newest), 60*time.Second)

	type shown struct {
		Messages int    `json:"messages"`
		First    string `json:"first"`
		Note     string `json:"note"`
	}
	look := func() (s shown) {
		b.eval(`(() => { const m = document.querySelectorAll('#transcript .message pre');
		  return {messages: m.length, first: m.length ? m[0].textContent.slice(0, 40) : '',
		    note: document.getElementById('transcript-earlier-note').textContent}; })()`, &s)
		return s
	}
	s := look()
	queries, served := meter.read()
	if served*10 > whole {
		t.Errorf("showing %d of %d messages the page was sent %d bytes of transcript in reads %q; the whole transcript is %d bytes",
			s.Messages, opening, served, queries, whole)
	}
	firstPage := s.Messages
	if firstPage == 0 || firstPage >= opening || !strings.Contains(s.Note, fmt.Sprint(opening-firstPage, " earlier messages")) {
		t.Fatalf("the tab shows %d messages, saying %q; want a window of the newest, counting the %d earlier ones", s.Messages, s.Note, opening-firstPage)
	}

	// Earlier messages are read when asked for.
	b.run("earlier messages", chromedp.Click(chromedp.CSS("#transcript-more")))
	b.wait("the earlier messages", fmt.Sprintf(`document.querySelectorAll('#transcript .message').length === %d`, 2*firstPage), 30*time.Second)
	if s = look(); !strings.HasPrefix(s.First, fmt.Sprintf("opening message %d ", opening-2*firstPage)) {
		t.Errorf("after asking for earlier messages the first shown is %q, want message %d", s.First, opening-2*firstPage)
	}
	queries, served = meter.read()
	if served*10 > whole {
		t.Errorf("showing %d of %d messages the page was sent %d bytes of transcript in reads %q; the whole transcript is %d bytes",
			2*firstPage, opening, served, queries, whole)
	}

	// The long block is asked to show whole, and stays so as a turn adds
	// to the transcript.
	longBlock := fmt.Sprintf(`Array.from(document.querySelectorAll('#transcript .message .block')).find((e) => e.querySelector('pre').textContent.startsWith(%q))`, fmt.Sprintf("long message %d ", long))
	type block struct {
		Shown int    `json:"shown"`
		Note  string `json:"note"`
	}
	lookBlock := func() (k block) {
		b.eval(`(() => { const e = `+longBlock+`; const note = e.querySelector('.block-more');
		  return {shown: e.querySelector('pre').textContent.length, note: note ? note.textContent : ''}; })()`, &k)
		return k
	}
	if k := lookBlock(); k.Shown >= longLength || !strings.Contains(k.Note, "more characters do not show") {
		t.Fatalf("the block of a %d-character message shows %d characters, saying %q; want a bounded beginning", longLength, k.Shown, k.Note)
	}
	b.run("show all", chromedp.Click(chromedp.CSS(`#transcript .block-more button`)))
	if k := lookBlock(); k.Shown != longLength || k.Note != "" {
		t.Fatalf("after Show all the block shows %d of %d characters, saying %q", k.Shown, longLength, k.Note)
	}
	call(t, "POST", meter.url+"/v1/sessions/"+id+"/messages", token, "window-1", `{"input":{"message":"one more"}}`)
	b.wait("the turn's messages", `Array.from(document.querySelectorAll('#transcript .message pre')).some((e) => e.textContent === 'one more')`, 30*time.Second)
	if k := lookBlock(); k.Shown != longLength || k.Note != "" {
		t.Errorf("after a turn the block asked to show whole shows %d of %d characters, saying %q", k.Shown, longLength, k.Note)
	}
	if s = look(); s.Messages != 2*firstPage {
		t.Errorf("after a turn the tab shows %d messages, want %d", s.Messages, 2*firstPage)
	}
}
