package ui_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
)

// TestInspectorLongTranscript opens the transcript of a session opened
// with 3,000 messages: the tab shows the newest messages, a bounded
// number of them, says how many earlier ones it leaves out and shows
// them a page at a time when asked; a turn that adds to the transcript
// while it shows keeps it bounded and showing the newest.
func TestInspectorLongTranscript(t *testing.T) {
	b := newBrowser(t, 180*time.Second)
	const token = "long-transcript-token"
	brainURL := braintest.Serve(t, t.TempDir(), token)
	const opening = 3000
	msgs := make([]api.Message, opening)
	for i := range msgs {
		msgs[i] = api.UserMessage(api.UserInput{Message: fmt.Sprintf("opening message %d", i)})
	}
	create, err := json.Marshal(map[string]any{"model": map[string]string{"provider": "scripted", "name": "demo"}, "transcript": msgs})
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(call(t, "POST", brainURL+"/v1/sessions", token, "create-long", string(create)), &sum); err != nil {
		t.Fatal(err)
	}
	id := sum.SessionID

	b.login(brainURL, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("open the session", `document.getElementById('live').dataset.state === 'following'`, 60*time.Second)
	b.run("transcript tab", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="transcript"]`)))
	newest := fmt.Sprintf("opening message %d", opening-1)
	b.wait("the newest message", fmt.Sprintf(`Array.from(document.querySelectorAll('#transcript .message pre')).some((e) => e.textContent === %q)`, newest), 60*time.Second)

	type shown struct {
		Messages int    `json:"messages"`
		First    string `json:"first"`
		Last     string `json:"last"`
		Note     string `json:"note"`
		Hidden   bool   `json:"hidden"`
	}
	look := func() (s shown) {
		b.eval(`(() => { const m = document.querySelectorAll('#transcript .message');
		  const text = (e) => e ? e.querySelector('pre').textContent : '';
		  const note = document.getElementById('transcript-earlier') || {textContent: '', hidden: true};
		  return {messages: m.length, first: text(m[0]), last: text(m[m.length - 1]),
		    note: note.textContent, hidden: note.hidden}; })()`, &s)
		return s
	}
	s := look()
	if s.Messages >= opening || s.Last != newest || s.Hidden {
		t.Fatalf("the transcript tab shows %d of %d messages, the last %q, a note of the earlier ones %q (hidden %v); want a part of them ending at %q, saying what it leaves out",
			s.Messages, opening, s.Last, s.Note, s.Hidden, newest)
	}
	firstPage := s.Messages
	if want := fmt.Sprint(opening-firstPage, " earlier messages"); !strings.Contains(s.Note, want) {
		t.Errorf("the note says %q, want it to count %q", s.Note, want)
	}

	b.run("earlier messages", chromedp.Click(chromedp.CSS("#transcript-more")))
	b.wait("the earlier messages", fmt.Sprintf(`document.querySelectorAll('#transcript .message').length === %d`, 2*firstPage), 30*time.Second)
	s = look()
	if s.Messages != 2*firstPage || s.First != fmt.Sprintf("opening message %d", opening-2*firstPage) || s.Last != newest {
		t.Errorf("after asking for earlier messages the tab shows %d from %q to %q, want %d from message %d to the newest",
			s.Messages, s.First, s.Last, 2*firstPage, opening-2*firstPage)
	}

	// A turn adds the message sent and the answer; the tab shows them,
	// still within what it showed.
	call(t, "POST", brainURL+"/v1/sessions/"+id+"/messages", token, "long-1", `{"input":{"message":"one more"}}`)
	b.wait("the turn's messages", `(() => { const m = document.querySelectorAll('#transcript .message pre'); return m.length > 0 && m[m.length - 1].textContent !== `+fmt.Sprintf("%q", newest)+`; })()`, 30*time.Second)
	s = look()
	if s.Messages != 2*firstPage {
		t.Errorf("after a turn the tab shows %d messages, want %d", s.Messages, 2*firstPage)
	}
}

// TestInspectorLongTranscriptBlock opens the transcript of a session
// whose message is 300,000 characters long: its block shows a bounded
// beginning of the text and how many characters do not show, and all of
// it once asked.
func TestInspectorLongTranscriptBlock(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "long-block-token"
	brainURL := braintest.Serve(t, t.TempDir(), token)
	const length = 300000
	tail := "<b>the end</b>"
	text := strings.Repeat("line of text\n", (length-len(tail))/13) + tail
	text += strings.Repeat("x", length-len(text))
	create, err := json.Marshal(map[string]any{"model": map[string]string{"provider": "scripted", "name": "demo"},
		"transcript": []api.Message{api.UserMessage(api.UserInput{Message: text})}})
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(call(t, "POST", brainURL+"/v1/sessions", token, "create-block", string(create)), &sum); err != nil {
		t.Fatal(err)
	}
	b.login(brainURL, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+sum.SessionID+`', true`, &ok)
	b.wait("open the session", `document.getElementById('live').dataset.state === 'following'`, 60*time.Second)
	b.run("transcript tab", chromedp.Click(chromedp.CSS(`.tabs button[data-tab="transcript"]`)))
	b.wait("the message", `document.querySelector('#transcript .message pre') !== null`, 60*time.Second)
	type block struct {
		Shown int    `json:"shown"`
		Note  string `json:"note"`
		End   bool   `json:"end"`
	}
	look := func() (s block) {
		b.eval(`(() => { const pre = document.querySelector('#transcript .message pre');
		  const note = document.querySelector('#transcript .message .block-more');
		  return {shown: pre.textContent.length, note: note ? note.textContent : '', end: pre.textContent.includes('<b>the end</b>')}; })()`, &s)
		return s
	}
	s := look()
	if s.Shown >= length || s.End || !strings.Contains(s.Note, " more characters do not show") {
		t.Fatalf("the block of a %d-character message shows %d characters (its end: %v), saying %q; want a bounded beginning and how much does not show",
			length, s.Shown, s.End, s.Note)
	}
	b.run("show all", chromedp.Click(chromedp.CSS(`#transcript .block-more button`)))
	if s = look(); s.Shown != length || !s.End || s.Note != "" {
		t.Errorf("after Show all the block shows %d of %d characters (its end: %v), saying %q", s.Shown, length, s.End, s.Note)
	}
}
