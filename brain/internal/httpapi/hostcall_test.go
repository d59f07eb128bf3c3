package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/hosts"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// hostFixture is a server whose sessions run tools on registered hosts,
// with one host registered and its commands stream open.
type hostFixture struct {
	*fixture
	hostID, token string
	commands      chan api.HostCommand
}

func newHostFixture(t *testing.T) *hostFixture {
	t.Helper()
	return newHostFixtureWith(t, Options{}, nil)
}

// newHostFixtureOn is newHostFixture over store (nil: in memory).
func newHostFixtureOn(t *testing.T, store journal.Store) *hostFixture {
	t.Helper()
	return newHostFixtureWith(t, Options{}, store)
}

// newHostFixtureWith is newHostFixture over a server with opts (its
// Hosts filled in) and store (nil: in memory).
func newHostFixtureWith(t *testing.T, opts Options, store journal.Store) *hostFixture {
	t.Helper()
	reg, err := hosts.Open(hosts.Config{Dir: filepath.Join(t.TempDir(), hosts.DirName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	opts.Hosts = reg
	f := &hostFixture{fixture: newEngineFixture(t, opts, session.Config{Store: store, Environments: hosts.Route(reg, nil)}, 0), commands: make(chan api.HostCommand, 8)}
	st, _, b := f.do("POST", "/v1/hosts", "")
	var host api.HostRegistration
	if st != 200 || json.Unmarshal(b, &host) != nil {
		t.Fatalf("register = %d %s", st, b)
	}
	f.hostID, f.token = host.HostID, host.Token
	cr, _ := http.NewRequest("GET", f.url+"/v1/hosts/"+f.hostID+"/commands", nil)
	cr.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := http.DefaultClient.Do(cr)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("commands: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	go readFrames(resp.Body, func(fr sseFrame) bool {
		if fr.event != "command" {
			return true
		}
		var cmd api.HostCommand
		if json.Unmarshal([]byte(fr.data), &cmd) == nil {
			f.commands <- cmd
		}
		return true
	})
	return f
}

// invoke creates a session whose tool "bg" runs on the host, sends a
// message calling it and answers the command the host received.
func (f *hostFixture) invoke() api.HostCommand {
	f.t.Helper()
	body := fmt.Sprintf(`{"model":{"provider":"scripted","name":"m"},
		"environments":[{"name":"local","driver":"host","host_id":%q}],
		"tools":[{"name":"bg","description":"bg","input_schema":{"type":"object"},"placements":{"local":{"implementation":{}}}}]}`, f.hostID)
	st, _, b := f.do("POST", "/v1/sessions", body, "Idempotency-Key", "create")
	var sum api.SessionSummary
	if st != 200 || json.Unmarshal(b, &sum) != nil {
		f.t.Fatalf("create = %d %s", st, b)
	}
	msg, _ := json.Marshal(api.UserInput{Message: `{"tool_calls":[{"name":"bg","input":{}}]}`})
	if st, _, b := f.do("POST", "/v1/sessions/"+sum.SessionID+"/messages", `{"input":`+string(msg)+`}`,
		"Idempotency-Key", "m", "Prefer", "respond-async"); st != 202 {
		f.t.Fatalf("send = %d %s", st, b)
	}
	select {
	case cmd := <-f.commands:
		return cmd
	case <-time.After(10 * time.Second):
		f.t.Fatal("no command reached the host")
	}
	return api.HostCommand{}
}

// call posts a service call of cmd's tool call to /call, under key when
// it is not empty.
func (f *hostFixture) call(cmd api.HostCommand, method, input, key string) (int, []byte) {
	f.t.Helper()
	b, _ := json.Marshal(api.HostServiceCall{SessionID: cmd.SessionID, Sequence: cmd.Sequence,
		Call: api.ServiceCall{Method: method, Input: json.RawMessage(input)}})
	headers := []string{"Authorization", "Bearer " + f.token}
	if key != "" {
		headers = append(headers, "Idempotency-Key", key)
	}
	st, _, out := f.do("POST", "/v1/hosts/"+f.hostID+"/call", string(b), headers...)
	return st, out
}

// kinds answers how many events of each type the session recorded.
func (f *hostFixture) kinds(sessionID string) map[string]int {
	f.t.Helper()
	st, _, b := f.do("GET", "/v1/sessions/"+sessionID+"/events?after=0", "")
	var page api.EventPage
	if st != 200 || json.Unmarshal(b, &page) != nil {
		f.t.Fatalf("events = %d %s", st, b)
	}
	n := map[string]int{}
	for _, ev := range page.Events {
		n[ev.EventType]++
	}
	return n
}

// TestHostCallUnderAKeyIsRecordedOnce: a service call that records (an
// event, a result, a finish) posted to /call again under the same
// Idempotency-Key, as a host whose answer was lost does, is answered
// with the first's sequence and recorded once, also once the finish
// closed the call; another call under the key is a 409 conflict, and a
// key on a method that records nothing is refused.
func TestHostCallUnderAKeyIsRecordedOnce(t *testing.T) {
	f := newHostFixture(t)
	cmd := f.invoke()

	emit := `{"event_type":"host.progress","data":{"done":1}}`
	st1, b1 := f.call(cmd, "emit", emit, "e1")
	st2, b2 := f.call(cmd, "emit", emit, "e1")
	if st1 != 200 || st2 != 200 || string(b1) != string(b2) {
		t.Fatalf("emit sent again under its key = %d %s then %d %s, want the first's sequence", st1, b1, st2, b2)
	}
	if st, b := f.call(cmd, "emit", `{"event_type":"host.progress","data":{"done":2}}`, "e1"); st != http.StatusConflict || !strings.Contains(string(b), api.CodeConflict) {
		t.Fatalf("another emit under the same key = %d %s, want 409 conflict", st, b)
	}
	result := `{"status":"ok","value":"partial"}`
	st1, b1 = f.call(cmd, "result", result, "r1")
	st2, b2 = f.call(cmd, "result", result, "r1")
	if st1 != 200 || st2 != 200 || string(b1) != string(b2) {
		t.Fatalf("result sent again under its key = %d %s then %d %s", st1, b1, st2, b2)
	}
	if st, b := f.call(cmd, "telemetry", `{}`, "t1"); st != http.StatusBadRequest || !strings.Contains(string(b), api.CodeInvalidRequest) {
		t.Fatalf("telemetry under a key = %d %s, want 400: it records nothing to answer again", st, b)
	}
	finish := `{"status":"ok","value":"complete"}`
	st1, b1 = f.call(cmd, "finish", finish, "f1")
	st2, b2 = f.call(cmd, "finish", finish, "f1")
	if st1 != 200 || st2 != 200 || string(b1) != string(b2) {
		t.Fatalf("finish sent again under its key after it closed the call = %d %s then %d %s", st1, b1, st2, b2)
	}
	n := f.kinds(cmd.SessionID)
	if n["host.progress"] != 1 || n[api.KindToolResultEmitted] != 1 || n[api.KindToolCallEnded] != 1 {
		t.Fatalf("recorded %v, want one event, one result and one end", n)
	}
	if st, b := f.call(cmd, "finish", finish, "f2"); st == 200 {
		t.Fatalf("a finish under another key after the call closed = %d %s, want refused", st, b)
	}
}
