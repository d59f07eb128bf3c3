package ui_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestInspectorExtensionEventsNamedLikeRecords: extension events whose
// names end in _started, _ended or _failed are rows of their own, with
// their origin; they neither show as an effect that runs forever nor end
// the row of Brain's record their data names.
func TestInspectorExtensionEventsNamedLikeRecords(t *testing.T) {
	b := newBrowser(t, 90*time.Second)
	const token = "extension-names-token"
	srv := serveInProcess(t, token, 0)
	id := srv.session(t)
	sum, err := srv.engine.Send(context.Background(), id, api.UserInput{Message: "phases"})
	if err != nil {
		t.Fatal(err)
	}
	b.login(srv.url, token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("the session's events", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null`, sum.LastSequence), 30*time.Second)
	var got struct {
		Running []string `json:"running"`
		Upload  string   `json:"upload"`
		Step    string   `json:"step"`
		Turn    string   `json:"turn"`
	}
	b.eval(`(() => {
	  const kindOf = (ev) => { const li = document.querySelector('#timeline li[data-event="' + ev + '"]'); return li ? li.dataset.kind : ''; };
	  return {
	    running: Array.from(document.querySelectorAll('#timeline li[data-outcome="running"]'), (li) => li.dataset.kind + ' #' + li.dataset.seq),
	    upload: kindOf('upload_started'),
	    step: kindOf('step_failed'),
	    turn: document.querySelector('#timeline li[data-kind="turn"] .outcome').textContent,
	  };
	})()`, &got)
	if len(got.Running) != 0 {
		t.Errorf("after the turn ended the timeline shows %v running", got.Running)
	}
	if got.Upload != "extension" || got.Step != "extension" {
		t.Errorf("upload_started shows as %q and step_failed as %q, want both as extension rows", got.Upload, got.Step)
	}
	if got.Turn != "ok" {
		t.Errorf("the turn shows %q, want ok", got.Turn)
	}
}
