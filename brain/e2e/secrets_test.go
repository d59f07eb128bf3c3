package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestNoCredentialLeaks drives a session through tools, callbacks,
// reports, failures, end and a failing delete, then looks for every
// credential in every file of the data directory, every event, the SSE
// stream, the logs and every error body.
func TestNoCredentialLeaks(t *testing.T) {
	b := newBrain(t, brain.Limits{})
	c := newClient(t, b.URL)
	f := newFixture(t)
	var bodies [][]byte
	id := c.create(api.CreateSessionRequest{
		Environments: []api.Environment{f.env("box", &bindingConf{Setup: "release", Teardown: "fail_once"})},
		Tools:        []api.Tool{tool("echo", "box", "echo"), tool("emitter", "box", "emit"), tool("bad", "box", "fail"), tool("later", "box", "returned")},
	}).SessionID
	if status, body := c.send(id, toolCalls("echo", "emitter", "bad", "later")); status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	f.Open("finish")
	c.waitEvent(id, ofType(api.KindActivationEnded))
	rep := f.received(envapi.RequestSetup)[0].Cmd.Operation.Reporter
	_, body := postGrant(t, rep.URL, rep.Token, map[string]any{"type": "event", "event_type": "diag", "data": map[string]string{"k": "v"}})
	bodies = append(bodies, body)
	_, body = postGrant(t, rep.URL, "not-"+rep.Token, map[string]any{"type": "event", "event_type": "diag", "data": nil})
	bodies = append(bodies, body)
	for _, x := range f.received(envapi.RequestExecute) {
		g := x.Cmd.Operation.Request.Callback
		_, body = postGrant(t, g.URL, g.Token, envapi.ExecutionCall{Method: "emit", Input: json.RawMessage(`{"event_type":"x","data":{}}`)})
		bodies = append(bodies, body)
		_, body = postGrant(t, g.URL, g.Token+"x", envapi.ExecutionCall{Method: "kv_put", Input: json.RawMessage(`{}`)})
		bodies = append(bodies, body)
	}
	f.waitFor(envapi.RequestCall, 1) // the turn-end release
	c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/end", nil, nil)
	f.FailNext("teardown", 1)
	_, body = c.do(http.MethodDelete, "/v1/sessions/"+id, nil, nil)
	bodies = append(bodies, body)

	secrets := map[string]string{"model key": modelKey, "environment credential": providerToken, "reporter token": rep.Token}
	tokens := f.callbackTokens()
	for i, tok := range tokens {
		secrets["callback token "+string(rune('a'+i))] = tok
	}
	if len(tokens) != 4 {
		t.Fatalf("provider saw %d callback tokens", len(tokens))
	}
	// The credential did reach the provider: the scan is not vacuous.
	if got := f.received(envapi.RequestSetup)[0].Auth; got != "Bearer "+providerToken {
		t.Fatalf("provider Authorization %q", got)
	}

	check := func(where string, data []byte) {
		t.Helper()
		for name, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s found in %s", name, where)
			}
		}
	}
	evs := c.events(id)
	raw, _ := json.Marshal(evs)
	check("events", raw)
	if len(evs) < 30 {
		t.Fatalf("only %d events: %s", len(evs), kindsLine(evs))
	}
	check("SSE stream", sse(t, b.URL, id))
	for i, body := range bodies {
		check("response body "+string(rune('0'+i)), body)
	}
	if files := scanFiles(t, b.Dir, check); files < 4 {
		t.Fatalf("walked %d files", files)
	}
	// Complete the delete, then scan the logs (which now also hold the
	// failed teardown).
	c.must(http.StatusNoContent, http.MethodDelete, "/v1/sessions/"+id, nil, nil)
	logs := b.logs.String()
	if !strings.Contains(logs, `"level"`) {
		t.Fatalf("no logs captured")
	}
	check("logs", []byte(logs))
}

// scanFiles hands check every file under dir with its contents and
// answers how many there were; a file it cannot read fails the test.
func scanFiles(t *testing.T, dir string, check func(path string, data []byte)) int {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		check(path, data)
		return nil
	})
	if err != nil {
		t.Fatalf("walked %d files of %s: %v", files, dir, err)
	}
	return files
}

// sse reads the whole event stream of an ended session.
func sse(t *testing.T, base, id string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/sessions/"+id+"/events?after=0", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	req.Header.Set("Accept", "text/event-stream")
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("SSE: %v", err)
	}
	if !bytes.Contains(b, []byte("event: session_ended")) {
		t.Fatalf("SSE stream did not reach session_ended: %.300s", b)
	}
	return b
}
