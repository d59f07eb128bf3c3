package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
)

// wasmTool is the loophost test Tool (its input names what it does),
// built from source once per test binary.
func wasmTool(t *testing.T) []byte {
	t.Helper()
	return agentlooptest.Build(t, "../internal/loophost/testdata/tool")
}

// admitTool posts a Tool module and answers its ToolAdmission.
func admitTool(t *testing.T, s *server, module []byte) (int, map[string]any) {
	t.Helper()
	r := s.do("POST", "/v1/tools", string(module), "Idempotency-Key", key(), "Content-Type", "application/octet-stream")
	var a map[string]any
	_ = json.Unmarshal(r.Body, &a)
	return r.Status, a
}

func componentImpl(id, grants string) json.RawMessage {
	s := `{"type":"brain_component","entrypoint":"run","id":"` + id + `"`
	if grants != "" {
		s += `,"grants":` + grants
	}
	return json.RawMessage(s + "}")
}

// wasmSession creates a session whose Tool "t" runs the admitted module id
// with grants on the environment env (driver brain unless driver is set).
func wasmSession(t *testing.T, s *server, env api.Environment, impl json.RawMessage) reply {
	t.Helper()
	req := api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{env},
		Tools: []api.Tool{{Name: "t", Description: "test tool", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{env.Name: {Implementation: impl}}}},
	}
	b, _ := json.Marshal(req)
	return s.do("POST", "/v1/sessions", string(b), "Idempotency-Key", key())
}

func mustSession(t *testing.T, s *server, env api.Environment, impl json.RawMessage) string {
	t.Helper()
	r := wasmSession(t, s, env, impl)
	if r.Status != 200 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	var sum api.SessionSummary
	_ = json.Unmarshal(r.Body, &sum)
	if sum.Status != api.StatusIdle {
		t.Fatalf("session %s: %s", sum.Status, kinds(s.events(sum.SessionID)))
	}
	return sum.SessionID
}

// callTool runs a turn whose scripted model calls the tool with input.
func callTool(input string) string {
	return script(map[string]any{"tool_calls": []map[string]any{{"name": "t", "input": json.RawMessage(input)}}})
}

// lastOutcome answers the outcome of the session's last tool call, and its
// terminal record kind.
func lastOutcome(t *testing.T, s *server, id string) (api.Outcome, string) {
	t.Helper()
	evs := s.events(id)
	var seq uint64
	for _, ev := range evs {
		if ev.EventType == api.KindToolCallStarted {
			seq = ev.Sequence
		}
	}
	if seq == 0 {
		t.Fatalf("no tool call: %v", kinds(evs))
	}
	ev := toolOutcome(t, evs, seq)
	return dataField[api.Outcome](t, ev, "outcome"), ev.EventType
}

func builtinEnv() api.Environment { return api.Environment{Name: "brain", Driver: api.DriverBrain} }

// TestWasmTools admits a Tool module through the real binary and runs it
// on the built-in brain environment: admission ids, grants, deadline,
// interrupt, traps and refused placements.
func TestWasmTools(t *testing.T) {
	allowed := t.TempDir()
	ws := filepath.Join(allowed, "ws")
	outside := t.TempDir()
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o600)
	_ = os.WriteFile(filepath.Join(allowed, "sibling.txt"), []byte("sibling"), 0o600)
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	routes := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(routes, []byte(`{"fixture":{"endpoint":"http://127.0.0.1:9"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "token"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "", "BRAIN_NO_WORKSPACE=1", "BRAIN_MAX_TOOL_SECS=3", "BRAIN_ENV_FILESYSTEM_ALLOW="+allowed+",scratch",
		"BRAIN_ENVIRONMENT_ROUTES_FILE="+routes, "BRAIN_ENV_SECRET_ALLOW=api="+secrets)
	module := wasmTool(t)

	// Admission: the id is the SHA-256; the same bytes answer the same
	// admission; an agentloop module is rejected as a Tool.
	status, a := admitTool(t, s, module)
	id, _ := a["id"].(string)
	if status != 200 || a["status"] != "admitted" || len(id) != 64 {
		t.Fatalf("admit = %d %v", status, a)
	}
	if _, again := admitTool(t, s, module); again["id"] != id || again["status"] != "admitted" {
		t.Fatalf("readmit %v", again)
	}
	if r := s.do("GET", "/v1/tools/"+id, ""); r.Status != 200 || !strings.Contains(string(r.Body), `"admitted"`) {
		t.Fatalf("GET = %d %s", r.Status, r.Body)
	}
	if r := s.do("GET", "/v1/tools/"+strings.Repeat("0", 64), ""); r.Status != 404 {
		t.Fatalf("GET unknown = %d", r.Status)
	}
	if r := s.do("GET", "/v1/agentloops/"+id, ""); r.Status != 404 {
		t.Fatalf("a tool is an agentloop: %d %s", r.Status, r.Body)
	}
	loop := agentlooptest.Build(t, "../internal/loophost/testdata/guest")
	if _, rej := admitTool(t, s, loop); rej["status"] != "rejected" {
		t.Fatalf("agentloop module as a tool: %v", rej)
	}
	if r := s.do("POST", "/v1/tools", string(module), "Content-Type", "application/octet-stream"); r.Status != 400 {
		t.Fatalf("without a key = %d", r.Status)
	}
	if r := s.do("POST", "/v1/tools", "", "Idempotency-Key", key(), "Content-Type", "application/octet-stream"); r.Status != 400 {
		t.Fatalf("empty = %d", r.Status)
	}
	if r := s.do("POST", "/v1/tools", "{}", "Idempotency-Key", key(), "Content-Type", "application/json"); r.Status != 415 {
		t.Fatalf("json = %d", r.Status)
	}

	t.Run("runs", func(t *testing.T) {
		sid := mustSession(t, s, builtinEnv(), componentImpl(id, ""))
		if r := s.send(sid, callTool(`{"op":"echo","n":7}`)); r.Status != 200 {
			t.Fatalf("turn = %d %s", r.Status, r.Body)
		}
		o, kind := lastOutcome(t, s, sid)
		if kind != api.KindToolCallEnded || o.Status != api.OutcomeOK || !jsonEqual(o.Value, []byte(`{"op":"echo","n":7}`)) {
			t.Fatalf("%s %+v", kind, o)
		}
		// The tool's emit is committed with the tool as its origin.
		s.send(sid, callTool(`{"op":"emit"}`))
		ev := waitEvent(t, s, sid, func(ev api.Event) bool { return ev.EventType == "test.note" })
		if ev.Origin == nil || ev.Origin.Kind != api.OriginTool {
			t.Fatalf("emit origin %+v", ev.Origin)
		}
	})

	t.Run("grants", func(t *testing.T) {
		grant := `{"filesystem":{"workspace":{"path":"` + ws + `","access":"write"}}}`
		sid := mustSession(t, s, builtinEnv(), componentImpl(id, grant))
		s.send(sid, callTool(`{"op":"write","path":"/workspace/note.txt","content":"from wasm"}`))
		if b, err := os.ReadFile(filepath.Join(ws, "note.txt")); err != nil || string(b) != "from wasm" {
			t.Fatalf("written %q %v", b, err)
		}
		s.send(sid, callTool(`{"op":"read","path":"/workspace/note.txt"}`))
		if o, _ := lastOutcome(t, s, sid); o.Status != api.OutcomeOK || string(o.Value) != `"from wasm"` {
			t.Fatalf("read %+v", o)
		}
		for _, in := range []string{
			`{"op":"read","path":"/workspace/../sibling.txt"}`,
			`{"op":"read","path":"/workspace/link/secret.txt"}`,
			`{"op":"write","path":"/workspace/link/planted.txt","content":"x"}`,
		} {
			s.send(sid, callTool(in))
			if o, _ := lastOutcome(t, s, sid); o.Status == api.OutcomeOK {
				t.Errorf("%s escaped: %s", in, o.Value)
			}
		}
		if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
			t.Fatal("a file was planted outside the grant")
		}
		// Without a grant nothing is visible.
		plain := mustSession(t, s, builtinEnv(), componentImpl(id, ""))
		s.send(plain, callTool(`{"op":"read","path":"/workspace/note.txt"}`))
		if o, _ := lastOutcome(t, s, plain); o.Status == api.OutcomeOK {
			t.Fatalf("ungranted read %+v", o)
		}
	})

	t.Run("secrets and scratch", func(t *testing.T) {
		sid := mustSession(t, s, builtinEnv(), componentImpl(id, `{"secrets":["api"],"filesystem":{"scratch":true}}`))
		s.send(sid, callTool(`{"op":"read","path":"/secrets/api/token"}`))
		// The Tool read the secret whole; the journal keeps it removed.
		if o, _ := lastOutcome(t, s, sid); o.Status != api.OutcomeOK || string(o.Value) != `"[redacted]"` {
			t.Fatalf("secret %+v", o)
		}
		s.send(sid, callTool(`{"op":"write","path":"/secrets/api/token","content":"x"}`))
		if o, _ := lastOutcome(t, s, sid); o.Status == api.OutcomeOK {
			t.Fatal("a secret was written")
		}
		if b, _ := os.ReadFile(filepath.Join(secrets, "token")); string(b) != "s3cret" {
			t.Fatalf("secret changed to %q", b)
		}
		s.send(sid, callTool(`{"op":"write","path":"/scratch/tmp","content":"x"}`))
		if o, _ := lastOutcome(t, s, sid); o.Status != api.OutcomeOK {
			t.Fatalf("scratch write %+v", o)
		}
		s.send(sid, callTool(`{"op":"list","path":"/scratch"}`))
		if o, _ := lastOutcome(t, s, sid); o.Status != api.OutcomeOK || string(o.Value) != `""` {
			t.Fatalf("scratch kept between calls: %+v", o)
		}
	})

	t.Run("stops", func(t *testing.T) {
		sid := mustSession(t, s, builtinEnv(), componentImpl(id, ""))
		// A guest that spins forever is stopped by the tool deadline.
		startT := time.Now()
		s.send(sid, callTool(`{"op":"loop"}`))
		if o, _ := lastOutcome(t, s, sid); o.Status != api.OutcomeTimeout {
			t.Fatalf("loop %+v", o)
		}
		if d := time.Since(startT); d > 20*time.Second {
			t.Fatalf("the deadline took %v", d)
		}
		// Traps and exits are tool errors.
		for _, op := range []string{"exit", "deadlock", "panic"} {
			s.send(sid, callTool(`{"op":"`+op+`"}`))
			if o, _ := lastOutcome(t, s, sid); o.Status != api.OutcomeFailed || o.Error.Code != api.FailureToolError {
				t.Fatalf("%s: %+v", op, o)
			}
		}
		// An interrupt cancels a running invocation.
		r := s.do("POST", "/v1/sessions/"+sid+"/messages", fmt.Sprintf(`{"input":{"message":%q}}`, callTool(`{"op":"loop"}`)), "Idempotency-Key", key(), "Prefer", "respond-async")
		if r.Status != 202 {
			t.Fatalf("submit = %d %s", r.Status, r.Body)
		}
		var turn uint64
		if err := json.Unmarshal(r.Body, &turn); err != nil {
			t.Fatalf("202 body %q", r.Body)
		}
		started := waitEvent(t, s, sid, func(ev api.Event) bool { return ev.EventType == api.KindToolCallStarted && ev.Sequence > turn })
		if c := s.do("POST", "/v1/sessions/"+sid+"/cancel", "", "Idempotency-Key", key()); c.Status != 204 {
			t.Fatalf("cancel = %d %s", c.Status, c.Body)
		}
		end := waitEvent(t, s, sid, func(ev api.Event) bool {
			return (ev.EventType == api.KindToolCallEnded || ev.EventType == api.KindToolCallFailed) && dataField[uint64](t, ev, "sequence") == started.Sequence
		})
		if o := dataField[api.Outcome](t, end, "outcome"); o.Status != api.OutcomeCancelled {
			t.Fatalf("interrupted %s %+v", end.EventType, o)
		}
	})

	t.Run("refused placements", func(t *testing.T) {
		for name, c := range map[string]struct {
			env  api.Environment
			impl json.RawMessage
			want string
		}{
			"wasm on http":       {api.Environment{Name: "h", Driver: api.DriverHTTP, URL: "http://127.0.0.1:9"}, componentImpl(id, ""), "runs only on a \"brain\" environment"},
			"wasm on a route":    {api.Environment{Name: "r", Driver: "fixture"}, componentImpl(id, ""), "runs only on a \"brain\" environment"},
			"opaque on brain":    {builtinEnv(), json.RawMessage(`{"tool":"write"}`), "runs only brain_component"},
			"unknown module":     {builtinEnv(), componentImpl(strings.Repeat("a", 64), ""), "not admitted"},
			"agentloop module":   {builtinEnv(), componentImpl(sha256hex(loop), ""), "not admitted"},
			"wrong entrypoint":   {builtinEnv(), json.RawMessage(`{"type":"brain_component","entrypoint":"turn","id":"` + id + `"}`), "entrypoint"},
			"grant outside":      {builtinEnv(), componentImpl(id, `{"filesystem":{"workspace":{"path":"`+outside+`","access":"read"}}}`), "BRAIN_ENV_FILESYSTEM_ALLOW"},
			"secret not allowed": {builtinEnv(), componentImpl(id, `{"secrets":["db"]}`), "BRAIN_ENV_SECRET_ALLOW"},
		} {
			r := wasmSession(t, s, c.env, c.impl)
			if r.Status != 422 {
				t.Errorf("%s: create = %d %s", name, r.Status, r.Body)
				continue
			}
			if e := r.apiError(t); !strings.Contains(e.Message, c.want) {
				t.Errorf("%s: message %q, want %q", name, e.Message, c.want)
			}
		}
	})
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestWasmToolInstanceCap: with BRAIN_MAX_CORE_INSTANCES=1 a second
// invocation while one runs fails at once with overloaded instead of
// waiting, and the slot is free again once the first ends.
func TestWasmToolInstanceCap(t *testing.T) {
	allowed := t.TempDir()
	s := start(t, "", "BRAIN_NO_WORKSPACE=1", "BRAIN_MAX_TOOL_SECS=60", "BRAIN_MAX_CORE_INSTANCES=1", "BRAIN_ENV_FILESYSTEM_ALLOW="+allowed)
	_, a := admitTool(t, s, wasmTool(t))
	id := a["id"].(string)
	busy := mustSession(t, s, builtinEnv(), componentImpl(id, `{"filesystem":{"workspace":{"path":"`+allowed+`","access":"write"}}}`))
	// The busy tool leaves a mark once its instance runs, then spins.
	r := s.do("POST", "/v1/sessions/"+busy+"/messages", fmt.Sprintf(`{"input":{"message":%q}}`, callTool(`{"op":"mark","path":"/workspace/busy","content":"x"}`)), "Idempotency-Key", key(), "Prefer", "respond-async")
	if r.Status != 202 {
		t.Fatalf("submit = %d %s", r.Status, r.Body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(allowed, "busy")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the busy tool did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	other := mustSession(t, s, builtinEnv(), componentImpl(id, ""))
	startT := time.Now()
	s.send(other, callTool(`{"op":"echo"}`))
	o, _ := lastOutcome(t, s, other)
	if o.Status != api.OutcomeFailed || o.Error.Code != api.CodeOverloaded || !strings.Contains(o.Error.Message, "BRAIN_MAX_CORE_INSTANCES") {
		t.Fatalf("at the cap: %+v %+v", o, o.Error)
	}
	if d := time.Since(startT); d > 10*time.Second {
		t.Fatalf("saturation waited %v", d)
	}
	if c := s.do("POST", "/v1/sessions/"+busy+"/cancel", "", "Idempotency-Key", key()); c.Status != 204 {
		t.Fatalf("cancel = %d", c.Status)
	}
	waitEvent(t, s, busy, func(ev api.Event) bool { return ev.EventType == api.KindToolCallEnded })
	deadline = time.Now().Add(30 * time.Second)
	for {
		s.send(other, callTool(`{"op":"echo"}`))
		if o, _ := lastOutcome(t, s, other); o.Status == api.OutcomeOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot was not given back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWasmToolRestart: a Wasm Tool running when the server is killed is
// recorded as an ambiguous interrupted failure after the restart and is
// never run again (it leaves one mark per run).
func TestWasmToolRestart(t *testing.T) {
	allowed := t.TempDir()
	env := []string{"BRAIN_NO_WORKSPACE=1", "BRAIN_MAX_TOOL_SECS=600", "BRAIN_ENV_FILESYSTEM_ALLOW=" + allowed}
	s := start(t, "", env...)
	_, a := admitTool(t, s, wasmTool(t))
	id := a["id"].(string)
	sid := mustSession(t, s, builtinEnv(), componentImpl(id, `{"filesystem":{"workspace":{"path":"`+allowed+`","access":"write"}}}`))
	r := s.do("POST", "/v1/sessions/"+sid+"/messages", fmt.Sprintf(`{"input":{"message":%q}}`, callTool(`{"op":"mark","path":"/workspace/runs","content":"run"}`)), "Idempotency-Key", key(), "Prefer", "respond-async")
	if r.Status != 202 {
		t.Fatalf("submit = %d %s", r.Status, r.Body)
	}
	started := waitEvent(t, s, sid, func(ev api.Event) bool { return ev.EventType == api.KindToolCallStarted })
	marks := func() string {
		b, _ := os.ReadFile(filepath.Join(allowed, "runs"))
		return string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for marks() == "" {
		if time.Now().After(deadline) {
			t.Fatal("the tool did not run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.kill()
	if !killedBySIGKILL(s.waitErr) {
		t.Fatalf("server ended with %v", s.waitErr)
	}
	s2 := start(t, s.DataDir, env...)
	if st := s2.summary(sid).Status; st != api.StatusIdle {
		t.Fatalf("status after restart %s", st)
	}
	evs := s2.events(sid)
	end := toolOutcome(t, evs, started.Sequence)
	if f := failurePayload(end); end.EventType != api.KindToolCallFailed || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Fatalf("%s %+v", end.EventType, f)
	}
	time.Sleep(500 * time.Millisecond)
	if got := marks(); got != "run\n" {
		t.Fatalf("marks %q: the tool ran again", got)
	}
	if n := count(s2.events(sid), api.KindToolCallStarted); n != 1 {
		t.Fatalf("%d tool calls started", n)
	}
	// The restarted server still runs the admitted Tool.
	if r := s2.do("GET", "/v1/tools/"+id, ""); r.Status != 200 || !strings.Contains(string(r.Body), `"admitted"`) {
		t.Fatalf("admission after the restart: %d %s", r.Status, r.Body)
	}
	s2.send(sid, callTool(`{"op":"echo"}`))
	if o, _ := lastOutcome(t, s2, sid); o.Status != api.OutcomeOK {
		t.Fatalf("after restart %+v", o)
	}
}
