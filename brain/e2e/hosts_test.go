package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// hostChildEnv makes the test binary a host process (see runHostChild).
const hostChildEnv = "BRAIN_E2E_HOST_CHILD"

// runHostChild is a host process: it registers (or resumes the
// registration in BRAIN_E2E_HOST_ID/_SECRET), prints "host <id> <token>"
// once connected, and serves tool "slow", which prints "started <session>
// <sequence>" and waits for its ctx, then prints "stopped <sequence>
// <cause>". It runs until killed.
func runHostChild() int {
	c, err := client.New(os.Getenv("BRAIN_E2E_HOST_URL"), &client.Options{Token: os.Getenv("BRAIN_E2E_HOST_TOKEN")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	ctx := context.Background()
	var h *client.Host
	if id := os.Getenv("BRAIN_E2E_HOST_ID"); id != "" {
		h, err = c.ResumeHost(api.HostRegistration{HostID: id, Token: os.Getenv("BRAIN_E2E_HOST_SECRET")})
	} else {
		h, err = c.Host(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h.Handle("slow", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		say("started %s %d", call.SessionID, call.Sequence)
		<-ctx.Done()
		say("stopped %d %v", call.Sequence, context.Cause(ctx))
		return client.OK("late"), nil
	})
	if err := h.Connected(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	reg := h.Registration()
	say("host %s %s", reg.HostID, reg.Token)
	select {}
}

// hostProc is a running host child.
type hostProc struct {
	cmd   *exec.Cmd
	lines chan string
	reg   api.HostRegistration
	done  chan struct{}
}

func startHost(t *testing.T, s *server, resume *api.HostRegistration) *hostProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hostChildEnv+"=1", "BRAIN_E2E_HOST_URL="+s.URL, "BRAIN_E2E_HOST_TOKEN="+s.Token)
	if resume != nil {
		cmd.Env = append(cmd.Env, "BRAIN_E2E_HOST_ID="+resume.HostID, "BRAIN_E2E_HOST_SECRET="+resume.Token)
	}
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &hostProc{cmd: cmd, lines: make(chan string, 64), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	f := strings.Fields(p.next(t, "host "))
	p.reg = api.HostRegistration{HostID: f[1], Token: f[2]}
	return p
}

// next waits for a line starting with prefix.
func (p *hostProc) next(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("host process ended before printing %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("host process printed no %q", prefix)
		}
	}
}

// quiet checks that the host prints nothing starting with prefix for d.
func (p *hostProc) quiet(t *testing.T, prefix string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-p.lines:
			if ok && strings.HasPrefix(l, prefix) {
				t.Fatalf("host printed %q", l)
			}
			if !ok {
				return
			}
		case <-timeout:
			return
		}
	}
}

func (p *hostProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// hostSession creates a session with tool "slow" on host id's
// environment "h".
func (s *server) hostSession(t *testing.T, hostID string) string {
	t.Helper()
	body := fmt.Sprintf(`{"model":{"provider":"scripted","name":"demo"},
		"environments":[{"name":"h","driver":"host","host_id":%q}],
		"tools":[{"name":"slow","description":"waits","input_schema":{"type":"object"},"placements":{"h":{"implementation":{}}}}]}`, hostID)
	r := s.do("POST", "/v1/sessions", body, "Idempotency-Key", key())
	if r.Status != 200 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	var sum api.SessionSummary
	json.Unmarshal(r.Body, &sum)
	return sum.SessionID
}

func (s *server) submit(t *testing.T, id, message string) uint64 {
	t.Helper()
	b, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: message}})
	r := s.do("POST", "/v1/sessions/"+id+"/messages", string(b), "Idempotency-Key", key(), "Prefer", "respond-async")
	if r.Status != 202 {
		t.Fatalf("submit = %d %s", r.Status, r.Body)
	}
	var seq uint64
	json.Unmarshal(r.Body, &seq)
	return seq
}

func hostRequest(s *server, method, path, bearer, body string) (*http.Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.URL+path, rd)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return httpClient.Do(req)
}

func hostDo(t *testing.T, s *server, method, path, bearer, body string) (int, string) {
	t.Helper()
	resp, err := hostRequest(s, method, path, bearer, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostProtocol is acceptance case 55 through the binary: registration,
// token scoping, the command a tool call writes (committed first, with an
// absolute deadline), displacement, the result route and its refusals,
// and a tool call without a connected host.
func TestHostProtocol(t *testing.T) {
	s := start(t, "")
	code, body := hostDo(t, s, "POST", "/v1/hosts", "", "")
	if code != 401 {
		t.Fatalf("register without a token = %d %s", code, body)
	}
	code, body = hostDo(t, s, "POST", "/v1/hosts", s.Token, "")
	var reg api.HostRegistration
	json.Unmarshal([]byte(body), &reg)
	if code != 200 || !regexp.MustCompile(`^host_[A-Za-z0-9]{20,32}$`).MatchString(reg.HostID) || reg.Token == "" {
		t.Fatalf("register = %d %s", code, body)
	}
	cmds := "/v1/hosts/" + reg.HostID + "/commands"
	for _, bearer := range []string{s.Token, "", reg.Token + "x"} {
		if code, body := hostDo(t, s, "GET", cmds, bearer, ""); code != 401 || !strings.Contains(body, `"unauthorized"`) {
			t.Fatalf("commands with bearer %q = %d %s", bearer, code, body)
		}
	}
	// The host token is good for its own routes only.
	if code, _ := hostDo(t, s, "GET", "/v1/sessions", reg.Token, ""); code != 401 {
		t.Fatalf("session list with a host token = %d", code)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	open := func() *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+cmds, nil)
		req.Header.Set("Authorization", "Bearer "+reg.Token)
		resp, err := httpClient.Do(req)
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Brain-Host-Connection") == "" {
			t.Fatalf("commands stream = %v %v", resp, err)
		}
		return resp
	}
	first := open()
	id := s.hostSession(t, reg.HostID)
	before := time.Now().UnixMilli()
	s.submit(t, id, toolTurn("slow"))
	var cmd api.HostCommand
	frames(first.Body, func(f frame) bool {
		if f.Event == "command" {
			json.Unmarshal([]byte(f.Data), &cmd)
			return false
		}
		return true
	})
	if cmd.Operation.Type != api.HostInvokeTool || cmd.Operation.Name != "slow" || cmd.SessionID != id || cmd.Environment != "h" {
		t.Fatalf("command = %+v", cmd)
	}
	if cmd.DeadlineAtMs == nil || *cmd.DeadlineAtMs < before+110_000 || *cmd.DeadlineAtMs > time.Now().UnixMilli()+121_000 {
		t.Fatalf("deadline_at_ms = %v, want about now + 120 s (absolute)", cmd.DeadlineAtMs)
	}
	started := waitEvent(t, s, id, func(ev api.Event) bool { return ev.EventType == api.KindToolCallStarted })
	if started.Sequence != cmd.Sequence {
		t.Fatalf("command names sequence %d, tool_call_started is %d", cmd.Sequence, started.Sequence)
	}
	// The results route: refusals, then the finish.
	results := "/v1/hosts/" + reg.HostID + "/results"
	finish := fmt.Sprintf(`{"session_id":%q,"sequence":%d,"update":{"type":"finish","outcome":{"status":"ok","value":"done"}}}`, id, cmd.Sequence)
	for _, c := range []struct {
		bearer, body string
		want         int
	}{
		{s.Token, finish, 401},
		{reg.Token, `{"session_id":`, 400},
		{reg.Token, `{"session_id":"x","sequence":1,"update":{"type":"finish"},"extra":1}`, 422},
		{reg.Token, fmt.Sprintf(`{"session_id":%q,"sequence":%d,"update":{"type":"bogus"}}`, id, cmd.Sequence), 422},
		{reg.Token, fmt.Sprintf(`{"session_id":%q,"sequence":%d,"update":{"type":"finish"}}`, id, cmd.Sequence+100), 0},
		{reg.Token, finish, 200},
		{reg.Token, finish, 0},
	} {
		code, body := hostDo(t, s, "POST", results, c.bearer, c.body)
		if (c.want != 0 && code != c.want) || (c.want == 0 && (code < 400 || code == 401)) {
			t.Fatalf("results %s = %d %s, want %d", c.body, code, body, c.want)
		}
	}
	end := waitEvent(t, s, id, func(ev api.Event) bool { return ev.EventType == api.KindToolCallEnded })
	if !strings.Contains(string(end.Data), `"value":"done"`) {
		t.Fatalf("tool_call_ended = %s", end.Data)
	}
	// A second connection closes the first, which is told why.
	second := open()
	defer second.Body.Close()
	var last string
	ended := frames(first.Body, func(f frame) bool { last = f.Event; return true })
	if !ended || last != "displaced" {
		t.Fatalf("first stream after a second connection: ended %v, last event %q", ended, last)
	}
	first.Body.Close()
	// Without a connection a call fails at once and nothing waits for a
	// host: a later connection receives no command.
	second.Body.Close()
	time.Sleep(200 * time.Millisecond)
	waitIdle(t, s, id)
	s.submit(t, id, toolTurn("slow"))
	notConnected := waitEvent(t, s, id, func(ev api.Event) bool {
		return ev.EventType == api.KindToolCallEnded && ev.Sequence > end.Sequence
	})
	if !strings.Contains(string(notConnected.Data), `"code":"host_not_connected"`) {
		t.Fatalf("tool call without a host = %s", notConnected.Data)
	}
	third := open()
	defer third.Body.Close()
	got := make(chan string, 1)
	go frames(third.Body, func(f frame) bool {
		if f.Event == "command" {
			got <- f.Data
			return false
		}
		return true
	})
	select {
	case c := <-got:
		t.Fatalf("a command was queued for a host that was not connected: %s", c)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestHostKilled kills the host process at each point of a call and
// checks the outcome rules of environments: a host that disappears with
// the call outstanding gives unknown; a call past its deadline stays a
// timeout; an interrupted call stays cancelled. A restarted host resuming
// the registration never receives the call again.
func TestHostKilled(t *testing.T) {
	s := start(t, "", "BRAIN_MAX_TOOL_SECS=2")
	cases := []struct {
		name    string
		act     func(t *testing.T, p *hostProc, id string, seq uint64)
		outcome string
	}{
		{"disconnect", func(t *testing.T, p *hostProc, id string, seq uint64) { p.kill() }, `"status":"unknown"`},
		{"deadline", func(t *testing.T, p *hostProc, id string, seq uint64) {
			if l := p.next(t, "stopped "); !strings.Contains(l, "deadline exceeded") {
				t.Fatalf("handler stopped with %q", l)
			}
			waitEvent(t, s, id, func(ev api.Event) bool { return ev.EventType == api.KindToolCallEnded })
			p.kill()
		}, `"status":"timeout"`},
		{"interrupt", func(t *testing.T, p *hostProc, id string, seq uint64) {
			if r := s.do("POST", "/v1/sessions/"+id+"/cancel", "", "Idempotency-Key", key()); r.Status != 204 {
				t.Fatalf("cancel = %d %s", r.Status, r.Body)
			}
			if l := p.next(t, "stopped "); !strings.Contains(l, "tool call cancelled") {
				t.Fatalf("handler stopped with %q", l)
			}
			waitEvent(t, s, id, func(ev api.Event) bool { return ev.EventType == api.KindToolCancelEnded })
			p.kill()
		}, `"status":"cancelled"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := startHost(t, s, nil)
			id := s.hostSession(t, p.reg.HostID)
			s.submit(t, id, toolTurn("slow"))
			l := strings.Fields(p.next(t, "started "))
			if l[1] != id {
				t.Fatalf("started %v", l)
			}
			started := waitEvent(t, s, id, func(ev api.Event) bool { return ev.EventType == api.KindToolCallStarted })
			c.act(t, p, id, started.Sequence)
			end := toolOutcome(t, waitAll(t, s, id, api.KindToolCallEnded), started.Sequence)
			if !strings.Contains(string(end.Data), c.outcome) {
				t.Fatalf("outcome %s, want %s", end.Data, c.outcome)
			}
			// The restarted host gets nothing of the old call.
			again := startHost(t, s, &p.reg)
			again.quiet(t, "started ", time.Second)
			evs := s.events(id)
			if n := count(evs, api.KindToolCallStarted); n != 1 {
				t.Fatalf("%d tool calls started, want 1: %v", n, kinds(evs))
			}
			if after := toolOutcome(t, evs, started.Sequence); string(after.Data) != string(end.Data) {
				t.Fatalf("outcome changed from %s to %s", end.Data, after.Data)
			}
		})
	}
}

// terminal answers the terminal record of the tool call started at seq,
// or nil while it has none.
func terminal(evs []api.Event, seq uint64) *api.Event {
	for _, ev := range evs {
		if ev.EventType != api.KindToolCallEnded && ev.EventType != api.KindToolCallFailed {
			continue
		}
		var d struct {
			Sequence uint64 `json:"sequence"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && d.Sequence == seq {
			return &ev
		}
	}
	return nil
}

// waitAll waits until a session has an event of kind and answers all its
// events.
func waitAll(t *testing.T, s *server, id, kind string) []api.Event {
	t.Helper()
	waitEvent(t, s, id, func(ev api.Event) bool { return ev.EventType == kind })
	return s.events(id)
}

// TestHostBrainKilled SIGKILLs Brain while a host command is outstanding.
// After the restart the call is an ambiguous failure, the host's
// registration still works (its process reconnects by itself) and the
// command is not replayed; a new call reaches the host.
func TestHostBrainKilled(t *testing.T) {
	port := freePort(t)
	s := start(t, "", "BRAIN_LISTEN=127.0.0.1:"+port)
	p := startHost(t, s, nil)
	id := s.hostSession(t, p.reg.HostID)
	s.submit(t, id, toolTurn("slow"))
	first := strings.Fields(p.next(t, "started "))
	s.kill()
	if !killedBySIGKILL(s.waitErr) {
		t.Fatalf("server ended with %v", s.waitErr)
	}
	if l := p.next(t, "stopped "); !strings.Contains(l, "host connection lost") {
		t.Fatalf("handler stopped with %q", l)
	}
	s2 := start(t, s.DataDir, "BRAIN_LISTEN=127.0.0.1:"+port)
	s2.summary(id) // loads the session: recovery runs
	evs := waitAll(t, s2, id, api.KindTurnFailed)
	var started uint64
	for _, ev := range evs {
		if ev.EventType == api.KindToolCallStarted {
			started = ev.Sequence
		}
	}
	if fmt.Sprint(started) != first[2] {
		t.Fatalf("host ran call %s, journal started %d", first[2], started)
	}
	end := toolOutcome(t, evs, started)
	if f := failurePayload(end); end.EventType != api.KindToolCallFailed || !f.Ambiguous || f.Code != api.FailureInterrupted {
		t.Fatalf("after the restart the call ended with %s %s, want an ambiguous failure", end.EventType, end.Data)
	}
	// The same host process reconnects; it gets the next call and never
	// the old one. Until it has reconnected a call fails at once for want
	// of the host, so each attempt follows its own call, by its sequence,
	// to whichever comes first: the host starting it or its terminal record.
	var next []string
	for deadline := time.Now().Add(20 * time.Second); next == nil; {
		if time.Now().After(deadline) {
			t.Fatal("the host never reconnected after the restart")
		}
		waitIdle(t, s2, id)
		evs := s2.events(id)
		before := evs[len(evs)-1].Sequence
		s2.submit(t, id, toolTurn("slow"))
		call := waitEvent(t, s2, id, func(ev api.Event) bool {
			return ev.EventType == api.KindToolCallStarted && ev.Sequence > before
		}).Sequence
		for wait := time.Now().Add(30 * time.Second); next == nil; {
			select {
			case l, ok := <-p.lines:
				if !ok {
					t.Fatal("the host process ended")
				}
				if f := strings.Fields(l); len(f) == 3 && f[0] == "started" {
					if f[2] != fmt.Sprint(call) {
						t.Fatalf("host ran call %s, the session's new call is %d (the outstanding one was %s)", f[2], call, first[2])
					}
					next = f
				}
				continue
			case <-time.After(20 * time.Millisecond):
			}
			if ended := terminal(s2.events(id), call); ended != nil {
				if !strings.Contains(string(ended.Data), "host_not_connected") {
					t.Fatalf("call %d ended with %s before reaching the host", call, ended.Data)
				}
				break
			}
			if time.Now().After(wait) {
				t.Fatalf("call %d neither reached the host nor ended", call)
			}
		}
	}
	if next[2] == first[2] {
		t.Fatalf("the outstanding command %s was replayed", first[2])
	}
	for _, ev := range s2.events(id) {
		if ev.EventType == api.KindToolCallStarted && fmt.Sprint(ev.Sequence) != first[2] && fmt.Sprint(ev.Sequence) != next[2] {
			if !strings.Contains(string(toolOutcome(t, s2.events(id), ev.Sequence).Data), "host_not_connected") {
				t.Fatalf("call %d neither reached the host nor failed for want of it", ev.Sequence)
			}
		}
	}
}

// TestHostReconnectsDuringDrain: a drain serves its admitted turns with
// their callbacks available, and a host's commands stream is the host's
// callback. A host whose connection drops during the drain connects again
// and receives the admitted turn's tool call; its finish is taken and the
// turn ends before the process exits.
func TestHostReconnectsDuringDrain(t *testing.T) {
	s := start(t, "")
	code, body := hostDo(t, s, "POST", "/v1/hosts", s.Token, "")
	var reg api.HostRegistration
	if json.Unmarshal([]byte(body), &reg); code != 200 {
		t.Fatalf("register = %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmds := "/v1/hosts/" + reg.HostID + "/commands"
	open := func() (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+cmds, nil)
		req.Header.Set("Authorization", "Bearer "+reg.Token)
		return httpClient.Do(req)
	}
	first, err := open()
	if err != nil || first.StatusCode != 200 {
		t.Fatalf("commands stream = %v %v", first, err)
	}
	id := s.hostSession(t, reg.HostID)
	s.submit(t, id, script(map[string]any{"delay_ms": 1500, "tool_calls": []map[string]any{{"name": "slow", "input": map[string]any{}}}}))
	waitEvent(t, s, id, func(ev api.Event) bool { return ev.EventType == api.KindModelCallStarted })
	s.beginDrain(t)
	first.Body.Close() // the host's connection drops while the turn's model call runs
	second, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer second.Body.Close()
	if second.StatusCode != 200 {
		b, _ := io.ReadAll(second.Body)
		t.Fatalf("the host's commands stream during the drain = %d %s", second.StatusCode, b)
	}
	var cmd api.HostCommand
	frames(second.Body, func(f frame) bool {
		if f.Event == "command" {
			json.Unmarshal([]byte(f.Data), &cmd)
			return false
		}
		return true
	})
	if cmd.SessionID != id || cmd.Operation.Name != "slow" {
		t.Fatalf("command after reconnecting = %+v", cmd)
	}
	finish := fmt.Sprintf(`{"session_id":%q,"sequence":%d,"update":{"type":"finish","outcome":{"status":"ok","value":"done"}}}`, id, cmd.Sequence)
	if code, body := hostDo(t, s, "POST", "/v1/hosts/"+reg.HostID+"/results", reg.Token, finish); code != 200 {
		t.Fatalf("finish during the drain = %d %s", code, body)
	}
	s.waitDrained(t)
	evs := start(t, s.DataDir).drainedEvents(t, id)
	var ended bool
	for _, ev := range evs {
		ended = ended || ev.EventType == api.KindToolCallEnded && strings.Contains(string(ev.Data), `"value":"done"`)
	}
	if !ended {
		t.Fatalf("the host's outcome is not the tool's: %v", kinds(evs))
	}
}
