package ui_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/braintest"
)

// TestInspectorServerRestart follows a session while its Brain stops and
// starts again on the same address over the same data directory: the page
// says that it reconnects, resumes after the last event it saw, shows
// every event once and in order, follows the turns run after the restart,
// and says that the attempts failed while Brain was down, no longer as a
// current error.
func TestInspectorServerRestart(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "restart-token"
	dir := filepath.Join(t.TempDir(), "data")
	first := braintest.Start(t, braintest.Options{DataDir: dir, Token: token})
	var sum struct {
		SessionID    string `json:"session_id"`
		LastSequence int    `json:"last_sequence"`
	}
	if err := json.Unmarshal(call(t, "POST", first.URL+"/v1/sessions", token, "create-1", `{"model":{"provider":"scripted","name":"demo"}}`), &sum); err != nil {
		t.Fatal(err)
	}
	id := sum.SessionID
	send := func(base, key, script string) int {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"input": map[string]string{"message": script}})
		if err := json.Unmarshal(call(t, "POST", base+"/v1/sessions/"+id+"/messages", token, key, string(body)), &sum); err != nil {
			t.Fatal(err)
		}
		return sum.LastSequence
	}
	last := send(first.URL, "send-1", `{"reply":"before the restart"}`)

	b.login(first.URL, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	shown := func(seq int) string {
		return fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && document.getElementById('live').dataset.state === 'following'`, seq)
	}
	b.wait("follow the session", shown(last), 30*time.Second)

	first.Stop()
	b.wait("the page notices", `document.getElementById('live').dataset.state === 'reconnecting'`, 30*time.Second)
	// Attempts fail while nothing listens.
	b.wait("a failed attempt", `document.getElementById('action-error').textContent !== ''`, 30*time.Second)
	second := braintest.Start(t, braintest.Options{DataDir: dir, Token: token, Addr: strings.TrimPrefix(first.URL, "http://")})
	b.wait("reconnected", `document.getElementById('live').dataset.state === 'following'`, 30*time.Second)
	const reply = "after the restart"
	last = send(second.URL, "send-2", `{"reply":"`+reply+`","stream":true}`)
	b.wait("follow again", shown(last), 30*time.Second)

	var got struct {
		Seqs     []string `json:"seqs"`
		Error    string   `json:"error"`
		Streamed []string `json:"streamed"`
		Turns    []string `json:"turns"`
		Note     string   `json:"note"`
	}
	b.eval(`({
	  seqs: Array.from(document.querySelectorAll('#events tbody tr'), (e) => e.dataset.seq),
	  error: document.getElementById('action-error').textContent,
	  streamed: Array.from(document.querySelectorAll('#timeline li[data-kind="model_call"] pre.stream'), (e) => e.textContent),
	  turns: Array.from(document.querySelectorAll('#timeline li[data-kind="turn"]'), (e) => e.dataset.outcome),
	  note: document.getElementById('stream-note').textContent,
	})`, &got)
	var page struct {
		Events []struct {
			Sequence int `json:"sequence"`
		} `json:"events"`
	}
	if err := json.Unmarshal(call(t, "GET", second.URL+"/v1/sessions/"+id+"/events?after=0", token, "", ""), &page); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ev := range page.Events {
		want = append(want, fmt.Sprint(ev.Sequence))
	}
	if strings.Join(got.Seqs, ",") != strings.Join(want, ",") {
		t.Errorf("events shown %v, want %v once each", got.Seqs, want)
	}
	if fmt.Sprint(got.Turns) != "[ok ok]" {
		t.Errorf("turn outcomes %v, want [ok ok]", got.Turns)
	}
	if len(got.Streamed) != 1 || got.Streamed[0] != reply {
		t.Errorf("streamed texts %q, want %q once", got.Streamed, reply)
	}
	if got.Error != "" {
		t.Errorf("following again after the restart, the page still says %q", got.Error)
	}
	if !strings.Contains(got.Note, "failed") || !strings.Contains(got.Note, "reconnected") {
		t.Errorf("stream note %q, want it to say the stream failed and was reconnected", got.Note)
	}
}
