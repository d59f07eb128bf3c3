package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

func run(t *testing.T, h *loophost.Host, id string, svc agentloop.Services, msg string) (map[string]any, error) {
	t.Helper()
	f, err := h.Func(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f(context.Background(), svc, input(msg))
	if err != nil {
		return nil, err
	}
	var r map[string]any
	if err := json.Unmarshal(out.Result, &r); err != nil {
		t.Fatalf("result %s: %v", out.Result, err)
	}
	return r, nil
}

func TestEveryServiceCrossesTheABI(t *testing.T) {
	h := openHost(t, loophost.Options{})
	id := admit(t, h, guest)
	svc := newFake()
	r, err := run(t, h, id, svc, "services")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"kv_put": 1.0, "kv_put_err": nil,
		"kv_read": map[string]any{"n": 1.0}, "kv_read_ok": true, "kv_read_err": nil,
		"absent_ok": false,
		"nul":       "null", "nul_ok": true,
		"kv_delete": 6.0,
		"emit":      7.0, "emit_err": nil,
		"emit_reserved": "reserved_name",
		"telemetry_err": nil,
		"events":        2.0, "events_err": nil,
		"model": "answer to 1 messages", "model_err": nil,
		"dispatch":       []any{map[string]any{"call_id": "c1", "sequence": 12.0, "events": nil, "finished": true}},
		"dispatch_err":   nil,
		"set_transcript": 13.0, "set_transcript_err": nil,
		"environments": "", "environments_err": "not_granted",
	}
	for k, v := range want {
		if got := r[k]; !reflect.DeepEqual(got, v) {
			t.Errorf("%s = %#v, want %#v", k, got, v)
		}
	}
	if len(r) != len(want) {
		t.Errorf("result has %d keys, want %d: %v", len(r), len(want), r)
	}
	calls := strings.Join(svc.calls, " ")
	if calls != "kv_put kv_read kv_read kv_put kv_read kv_delete emit emit telemetry events model dispatch set_transcript environments" {
		t.Errorf("calls: %s", calls)
	}
	if len(svc.emitted) != 1 || svc.emitted[0] != `progress {"step":1}` || len(svc.telemetry) != 1 || svc.telemetry[0] != `{"t":1}` {
		t.Errorf("emitted %q telemetry %q", svc.emitted, svc.telemetry)
	}
	if len(svc.saved) != 2 || svc.saved[0].Text() != "services" || svc.saved[1].Text() != "answer to 1 messages" {
		t.Errorf("saved transcript %+v", svc.saved)
	}
}

func TestFreshInstancePerActivationAndNoCompiles(t *testing.T) {
	h := openHost(t, loophost.Options{})
	id := admit(t, h, guest)
	if h.Compiles() != 1 {
		t.Fatalf("compiles after admission = %d, want 1", h.Compiles())
	}
	for i := 0; i < 3; i++ {
		r, err := run(t, h, id, newFake(), "count")
		if err != nil {
			t.Fatal(err)
		}
		if r["turns"] != 1.0 {
			t.Fatalf("activation %d saw turns=%v: guest memory survived", i, r["turns"])
		}
	}
	if h.Compiles() != 1 || h.Activations() != 3 {
		t.Fatalf("compiles %d activations %d, want 1 and 3", h.Compiles(), h.Activations())
	}
	// Admitting the same bytes again compiles nothing.
	if admit(t, h, guest) != id || h.Compiles() != 1 {
		t.Fatalf("readmission compiled: %d", h.Compiles())
	}
}

func TestGuestFailures(t *testing.T) {
	var stdout, stderr string
	h := openHost(t, loophost.Options{MaxLinearMemoryBytes: 64 << 20, MaxOutputBytes: 64,
		Output: func(_ string, o, e []byte) { stdout, stderr = string(o), string(e) }})
	id := admit(t, h, guest)
	for _, c := range []struct {
		msg  string
		want string
	}{
		{"fail", "boom"},
		{"panic", "agentloop panicked: kaboom"},
		{"exit", "exited with code 3; stderr: leaving with"},
		{"exit-zero", "exited with code 0; stderr: leaving with 0"},
		{"grow", "turn: wasm error: unreachable; stderr: runtime: out of memory"},
	} {
		t.Run(c.msg, func(t *testing.T) {
			_, err := run(t, h, id, newFake(), c.msg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := run(t, h, id, newFake(), "print"); err != nil {
		t.Fatal(err)
	}
	if stdout != "to stdout\n" || stderr != "to stderr\n" {
		t.Fatalf("captured %q %q", stdout, stderr)
	}
}

func TestOutputIsBounded(t *testing.T) {
	var stdout string
	h := openHost(t, loophost.Options{MaxOutputBytes: 5, Output: func(_ string, o, _ []byte) { stdout = string(o) }})
	id := admit(t, h, guest)
	if _, err := run(t, h, id, newFake(), "print"); err != nil {
		t.Fatal(err)
	}
	if stdout != "to st" {
		t.Fatalf("stdout %q, want the first 5 bytes", stdout)
	}
}

func TestCancellationClosesASpinningGuest(t *testing.T) {
	h := openHost(t, loophost.Options{})
	id := admit(t, h, guest)
	f, _ := h.Func(context.Background(), id)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f(ctx, newFake(), input("spin"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v to stop", d)
	}
}

func TestServiceErrorKeepsItsIdentity(t *testing.T) {
	h := openHost(t, loophost.Options{})
	id := admit(t, h, guest)
	svc := newFake()
	svc.modelErr = func(n int) error {
		if n == 2 {
			return session.ErrModelCallLimit
		}
		return nil
	}
	_, err := run(t, h, id, svc, "model-twice")
	var ge *loophost.GuestError
	if !errors.As(err, &ge) || !errors.Is(err, session.ErrModelCallLimit) {
		t.Fatalf("err = %#v, want a GuestError wrapping ErrModelCallLimit", err)
	}
	if !strings.Contains(err.Error(), "model call 2") || !strings.Contains(err.Error(), "model_call_limit") {
		t.Fatalf("message %q", err)
	}
}

// The smallest modules: a command exporting _start, and an empty module.
var (
	commandModule = []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type: () -> ()
		3, 2, 1, 0, // func 0: type 0
		7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, // export "_start" func 0
		10, 4, 1, 2, 0, 0x0b} // code: empty body
	emptyModule = []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
)

func TestAdmissionRejectsWhatCannotRun(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, loophost.Options{Dir: dir})
	if _, err := h.Admit(context.Background(), nil); !errors.Is(err, loophost.ErrEmpty) {
		t.Fatalf("empty: %v", err)
	}
	cases := map[string][]byte{
		"invalid module":      []byte("not wasm at all"),
		"a WASI command":      commandModule,
		"exports no memory":   emptyModule,
		"brain.model_v2":      nil, // filled below
		"exports no function": nil,
	}
	delete(cases, "brain.model_v2")
	delete(cases, "exports no function")
	ids := map[string]string{}
	for want, b := range cases {
		a, err := h.Admit(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != loophost.StatusRejected || a.Error == nil || !strings.Contains(a.Error.Message, want) || a.Error.Code != api.CodeInvalidRequest {
			t.Errorf("%s: %+v %+v", want, a, a.Error)
		}
		ids[want] = a.ID
		if _, err := h.Func(context.Background(), a.ID); !errors.Is(err, loophost.ErrNotAdmitted) {
			t.Errorf("%s: Func: %v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ids["a WASI command"]+".wasm")); !os.IsNotExist(err) {
		t.Errorf("a rejected module was stored: %v", err)
	}
	// Rejections are remembered across a restart.
	_ = h.Close(context.Background())
	h2 := openHost(t, loophost.Options{Dir: dir})
	for want, id := range ids {
		a, ok := h2.Admission(id)
		if !ok || a.Status != loophost.StatusRejected || !strings.Contains(a.Error.Message, want) {
			t.Errorf("after restart %s: %v %+v", want, ok, a)
		}
	}
}

func TestRestartLoadsAdmittedModulesFromTheCache(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, loophost.Options{Dir: dir})
	id := admit(t, h, guest)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Func(context.Background(), id); !errors.Is(err, loophost.ErrClosed) {
		t.Fatalf("closed host Func: %v", err)
	}
	stored, err := os.ReadFile(filepath.Join(dir, id+".wasm"))
	if err != nil || string(stored) != string(guest) {
		t.Fatalf("stored module differs: %v", err)
	}
	start := time.Now()
	h2 := openHost(t, loophost.Options{Dir: dir})
	t.Logf("reopen with a cached %d-byte module: %v", len(guest), time.Since(start))
	if a, ok := h2.Admission(id); !ok || a.Status != loophost.StatusAdmitted {
		t.Fatalf("after restart: %+v", a)
	}
	if r, err := run(t, h2, id, newFake(), "count"); err != nil || r["turns"] != 1.0 {
		t.Fatalf("after restart: %v %v", r, err)
	}
}

func TestCompilationCacheDefaultsToTheAgentloopsDir(t *testing.T) {
	dir := t.TempDir()
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	// The command module compiles (and is cached) before validation
	// rejects it.
	if _, err := h.Admit(context.Background(), commandModule); err != nil {
		t.Fatal(err)
	}
	var files int
	_ = filepath.WalkDir(filepath.Join(dir, "cache"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Fatal("nothing was written under <dir>/cache")
	}
}

func TestResolve(t *testing.T) {
	h := openHost(t, loophost.Options{})
	id := admit(t, h, guest)
	f, err := h.Resolve(context.Background(), []byte(`{"type":"brain_builtin","name":"default"}`))
	if err != nil || reflect.ValueOf(f).Pointer() != reflect.ValueOf(agentloop.Default).Pointer() {
		t.Fatalf("builtin without BuiltinWasm: %v", err)
	}
	// The same implementation written otherwise resolves the same.
	for _, impl := range []string{`{"name":"default","type":"brain_builtin"}`, `{ "type": "brain_builtin" }`} {
		if f, err := h.Resolve(context.Background(), []byte(impl)); err != nil || reflect.ValueOf(f).Pointer() != reflect.ValueOf(agentloop.Default).Pointer() {
			t.Fatalf("%s: %v", impl, err)
		}
	}
	if _, err := h.Resolve(context.Background(), []byte(`{"type":"brain_component","entrypoint":"turn","id":"`+id+`"}`)); err != nil {
		t.Fatal(err)
	}
	for impl, want := range map[string]error{
		`{"type":"brain_component","entrypoint":"run","id":"` + id + `"}`:                       loophost.ErrUnsupported,
		`{"type":"brain_component","entrypoint":"turn","id":"` + strings.Repeat("a", 64) + `"}`: loophost.ErrNotAdmitted,
		`{"type":"brain_builtin","name":"other"}`:                                               loophost.ErrUnsupported,
		`{"type":"remote"}`: loophost.ErrUnsupported,
		`[]`:                loophost.ErrUnsupported,
	} {
		if _, err := h.Resolve(context.Background(), []byte(impl)); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", impl, err, want)
		}
	}
}

func TestBuiltinWasmRunsTheEmbeddedDefaultLoop(t *testing.T) {
	h := openHost(t, loophost.Options{BuiltinWasm: true})
	f, err := h.Resolve(context.Background(), []byte(`{"type":"brain_builtin","name":"default"}`))
	if err != nil {
		t.Fatal(err)
	}
	svc := newFake()
	out, err := f(context.Background(), svc, input("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Result) != `"answer to 1 messages"` || h.Activations() != 1 {
		t.Fatalf("result %s activations %d", out.Result, h.Activations())
	}
	if len(svc.saved) != 2 || svc.saved[0].Text() != "hello" {
		t.Fatalf("saved %+v", svc.saved)
	}
	if a, ok := h.Admission(builtin.DefaultID()); ok {
		t.Fatalf("the embedded loop is not an admitted module: %+v", a)
	}
}

// Closing the host while a guest runs stops the guest; its memory is
// released only after the activation returns.
func TestCloseDuringAnActivation(t *testing.T) {
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: t.TempDir(), CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	id := admit(t, h, guest)
	f, _ := h.Func(context.Background(), id)
	done := make(chan error, 1)
	go func() {
		_, err := f(context.Background(), newFake(), input("spin"))
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a closed activation succeeded")
		}
		// The loop did not fail: the server stopped it.
		var te *session.TurnError
		if !errors.As(err, &te) || te.Code != api.CodeOverloaded || !te.Retryable || !errors.Is(err, loophost.ErrClosed) {
			t.Fatalf("a closed activation failed with %v, want a retryable overloaded TurnError wrapping ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the guest kept running after Close")
	}
}

// A rejection note damaged into one that claims the module admitted (no
// module stands behind it) is ignored after a restart: the module is not
// reported admitted, and admitting its bytes again compiles them and
// rewrites the note.
func TestDamagedRejectionNoteIsIgnored(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, loophost.Options{Dir: dir})
	a, err := h.Admit(context.Background(), emptyModule)
	if err != nil || a.Status != loophost.StatusRejected {
		t.Fatalf("admit = %+v %v", a, err)
	}
	_ = h.Close(context.Background())
	note := filepath.Join(dir, a.ID+".rejected")
	if err := os.WriteFile(note, []byte(`{"id":"`+a.ID+`","status":"admitted"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h2 := openHost(t, loophost.Options{Dir: dir})
	if got, ok := h2.Admission(a.ID); ok {
		t.Fatalf("after restart the damaged note answers %+v", got)
	}
	again, err := h2.Admit(context.Background(), emptyModule)
	if err != nil || again.Status != loophost.StatusRejected || again.Error == nil || !strings.Contains(again.Error.Message, "exports no memory") {
		t.Fatalf("admitted again: %+v %v", again, err)
	}
	b, err := os.ReadFile(note)
	if err != nil || !strings.Contains(string(b), `"status":"rejected"`) {
		t.Fatalf("the note after admitting again: %s %v", b, err)
	}
}

// A rejection is remembered under the terms it was judged by: a module
// rejected for the node's linear memory limit is judged anew once the
// operator raises the limit, not answered "rejected" from the old note.
func TestRejectionUnderOtherLimitsIsJudgedAgain(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, loophost.Options{Dir: dir, MaxLinearMemoryBytes: 64 << 10})
	a, err := h.Admit(context.Background(), guest)
	if err != nil || a.Status != loophost.StatusRejected {
		t.Fatalf("admit under a one-page limit = %+v %v", a, err)
	}
	_ = h.Close(context.Background())
	// Under the same terms the note stands, answered without a compile.
	same := openHost(t, loophost.Options{Dir: dir, MaxLinearMemoryBytes: 64 << 10})
	if got, ok := same.Admission(a.ID); !ok || got.Status != loophost.StatusRejected || same.Compiles() != 0 {
		t.Fatalf("under the same limit: %+v %v after %d compiles", got, ok, same.Compiles())
	}
	_ = same.Close(context.Background())
	h2 := openHost(t, loophost.Options{Dir: dir})
	if got, ok := h2.Admission(a.ID); ok {
		t.Fatalf("under the default limit the old rejection answers %+v", got)
	}
	if again, err := h2.Admit(context.Background(), guest); err != nil || again.Status != loophost.StatusAdmitted {
		t.Fatalf("admitted again under the default limit: %+v %v", again, err)
	}
}

// The head of stderr a failure quotes is cut between characters: the
// failure's message is valid UTF-8, never a character cut in two (which
// JSON would carry as U+FFFD).
func TestStderrInAFailureIsCutBetweenCharacters(t *testing.T) {
	h := openHost(t, loophost.Options{})
	_, err := run(t, h, admit(t, h, guest), newFake(), "exit-long")
	if err == nil {
		t.Fatal("the turn succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "stderr: €€€") || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "€") {
		t.Fatalf("failure message of %d bytes ending %q, want it to quote whole characters of stderr", len(msg), msg[max(len(msg)-8, 0):])
	}
}

// Closing the host while an admission compiles waits for it: the process
// does not crash, and the module is not judged by a runtime closed under
// it (answered or remembered as rejected).
func TestCloseDuringAnAdmission(t *testing.T) {
	dir := t.TempDir()
	// A cache of its own: compiling the guest takes a while.
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: dir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	before := h.Compiles()
	type result struct {
		a   loophost.Admission
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := h.Admit(context.Background(), guest)
		done <- result{a, err}
	}()
	for h.Compiles() == before {
		time.Sleep(time.Millisecond)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err == nil && r.a.Status != loophost.StatusAdmitted || r.err != nil && !errors.Is(r.err, loophost.ErrClosed) {
		t.Fatalf("admission during Close answered %+v %+v, %v; want admitted or ErrClosed", r.a, r.a.Error, r.err)
	}
	h = openHost(t, loophost.Options{Dir: dir})
	if a, err := h.Admit(context.Background(), guest); err != nil || a.Status != loophost.StatusAdmitted {
		t.Fatalf("after a reopen the module is %+v %+v, %v; want admitted", a, a.Error, err)
	}
}
