package loophost_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// rawModule is a hand-assembled core module with the agentloop (or Tool)
// ABI: it imports the named functions of the host module "brain" (answer
// with its own type, every other name as a service), defines one memory of
// pages 64 KiB pages exported as "memory", and exports brain_alloc and the
// entrypoint (turn, or run for a Tool) with the given bodies (instructions
// only; no locals). The host imports are functions 0..len(imports)-1.
type rawModule struct {
	imports []string
	pages   int
	alloc   []byte
	entry   []byte
	export  string
	data    [][]byte
	// other are further import entries (module, name and descriptor
	// bytes) after the host functions: globals or tables, never
	// functions, which would shift the indices of those defined.
	other [][]byte
}

func (m rawModule) bytes() []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	section := func(id byte, body []byte) {
		b = append(b, id)
		b = binary.AppendUvarint(b, uint64(len(body)))
		b = append(b, body...)
	}
	name := func(dst []byte, s string) []byte {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		return append(dst, s...)
	}
	// Types: 0 (i32 i32) -> i64, 1 (i32) -> i32, 2 (i32 i32) -> i32.
	section(1, []byte{3,
		0x60, 2, 0x7f, 0x7f, 1, 0x7e,
		0x60, 1, 0x7f, 1, 0x7f,
		0x60, 2, 0x7f, 0x7f, 1, 0x7f})
	if len(m.imports)+len(m.other) > 0 {
		imp := binary.AppendUvarint(nil, uint64(len(m.imports)+len(m.other)))
		for _, n := range m.imports {
			imp = name(imp, "brain")
			imp = name(imp, n)
			t := byte(0)
			if n == "answer" {
				t = 2
			}
			imp = append(imp, 0, t)
		}
		for _, o := range m.other {
			imp = append(imp, o...)
		}
		section(2, imp)
	}
	section(3, []byte{2, 1, 0})
	section(5, binary.AppendUvarint([]byte{1, 0}, uint64(m.pages)))
	n := uint64(len(m.imports))
	exp := []byte{3}
	exp = append(name(exp, "memory"), 2, 0)
	exp = append(name(exp, "brain_alloc"), 0)
	exp = binary.AppendUvarint(exp, n)
	export := m.export
	if export == "" {
		export = "turn"
	}
	exp = append(name(exp, export), 0)
	exp = binary.AppendUvarint(exp, n+1)
	section(7, exp)
	code := []byte{2}
	for _, body := range [][]byte{m.alloc, m.entry} {
		fn := append([]byte{0}, body...)
		fn = append(fn, 0x0b)
		code = binary.AppendUvarint(code, uint64(len(fn)))
		code = append(code, fn...)
	}
	section(10, code)
	if len(m.data) > 0 {
		section(11, dataBody(m.data...))
	}
	return b
}

// i32c and i64c are i32.const and i64.const.
func i32c(v int32) []byte { return append([]byte{0x41}, sleb(int64(v))...) }
func i64c(v int64) []byte { return append([]byte{0x42}, sleb(v)...) }

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// memoryFill is memory.fill (dst, byte, n on the stack).
var memoryFill = []byte{0xfc, 0x0b, 0x00}

// A guest that fails with a message of 70 MiB has its turn recorded as
// failed by the agentloop, with a bounded message, as a tool's failure is:
// not refused by the journal and closed as if a restart had interrupted it.
func TestGuestFailureWithAHugeMessage(t *testing.T) {
	h := openHost(t, loophost.Options{})
	const n = 70 << 20
	prefix, suffix := `{"error":{"message":"`, `"}}`
	m := rawModule{
		pages: (n + 2<<20) / 65536,
		alloc: i32c(n + 1<<20),
		entry: cat(i32c(int32(len(prefix))), i32c('x'), i32c(n), memoryFill, i64c(int64(len(prefix)+n+len(suffix)))),
		data:  [][]byte{active(0, prefix), active(int32(len(prefix)+n), suffix)},
	}
	e := engine(t, h, session.Limits{})
	sid := create(t, e, admit(t, h, m.bytes()))
	_, err := e.Send(context.Background(), sid, api.UserInput{Message: "hi"})
	var te *session.TurnError
	if !errors.As(err, &te) || te.Code != api.FailureAgentloopFailed {
		t.Fatalf("send answered %.200v, want the turn failed with %s", err, api.FailureAgentloopFailed)
	}
	var failed []api.Failure
	for after := uint64(0); ; {
		page, err := e.Events(context.Background(), sid, after)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			break
		}
		for _, ev := range page.Events {
			if ev.EventType == api.KindTurnFailed || ev.EventType == api.KindActivationFailed {
				var f api.Failure
				if err := json.Unmarshal(ev.Data, &f); err != nil {
					t.Fatal(err)
				}
				failed = append(failed, f)
			}
		}
		after = page.NextCursor
	}
	if len(failed) != 2 {
		t.Fatalf("%d failure records, want activation_failed and turn_failed", len(failed))
	}
	for _, f := range failed {
		if f.Code != api.FailureAgentloopFailed || f.Ambiguous || len(f.Message) == 0 || len(f.Message) > 4096 {
			t.Errorf("recorded failure %s (ambiguous %v) with a message of %d bytes, want %s with a message of at most 4096 bytes",
				f.Code, f.Ambiguous, len(f.Message), api.FailureAgentloopFailed)
		}
	}
}

// anyEnvs accepts every environment and answers every operation.
type anyEnvs struct{}

func (anyEnvs) Deliver(context.Context, session.Operation) (envapi.Receipt, error) {
	return envapi.Result(json.RawMessage("null")), nil
}

// A Wasm agentloop placed on a host environment cannot run there (a host
// runs Tools), and Brain does not run it in its own process instead: the
// create is refused.
func TestWasmLoopOnAHostEnvironmentIsRefused(t *testing.T) {
	h := openHost(t, loophost.Options{})
	id := admit(t, h, guest)
	store, err := journal.OpenFileStore(filepath.Join(t.TempDir(), "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := session.New(session.Config{Store: store, Loops: h.Resolve, Environments: anyEnvs{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Close(context.Background())
		_ = store.Close()
	})
	impl, _ := json.Marshal(map[string]string{"type": "brain_component", "entrypoint": "turn", "id": id})
	sum, err := e.Create(context.Background(), "", api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Agentloop:    &api.Agentloop{Implementation: impl, Environment: "desk"},
		Environments: []api.Environment{{Name: "desk", Driver: api.DriverHost, HostID: "host_0123456789abcdefghij"}},
	})
	if err == nil {
		_, serr := e.Send(context.Background(), sum.SessionID, api.UserInput{Message: "count"})
		t.Fatalf("the create was accepted; a turn then ran %d Wasm instances in Brain (send: %v)", h.Activations(), serr)
	}
	if !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("create: %v, want it refused as invalid", err)
	}
}

// importEntry is one entry of an import section: module, name and the
// descriptor bytes.
func importEntry(mod, name string, desc ...byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(mod)))
	b = append(b, mod...)
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	return append(b, desc...)
}

// A module that imports a global or a table compiles, but no instance of
// it can be created: the host modules export functions only. It is
// rejected at admission, as an agentloop and as a Tool, instead of being
// admitted and then failing every turn.
func TestAdmissionRefusesImportsTheHostDoesNotProvide(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	for _, c := range []struct {
		name, want string
		entry      []byte
	}{
		{"global of the host module", "global brain.stack_pointer", importEntry("brain", "stack_pointer", 0x03, 0x7f, 0x00)},
		{"global of WASI", "global wasi_snapshot_preview1.g", importEntry("wasi_snapshot_preview1", "g", 0x03, 0x7f, 0x01)},
		{"global of another module", "global env.__memory_base", importEntry("env", "__memory_base", 0x03, 0x7f, 0x00)},
		{"table", "table env.__indirect_function_table", importEntry("env", "__indirect_function_table", 0x01, 0x70, 0x00, 0x01)},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, export := range []string{"turn", "run"} {
				m := rawModule{imports: []string{"emit", "answer"}, pages: 1, alloc: i32c(0), entry: i64c(0), export: export, other: [][]byte{c.entry}}
				admit := h.Admit
				if export == "run" {
					admit = h.AdmitTool
				}
				a, err := admit(context.Background(), m.bytes())
				if err != nil {
					t.Fatal(err)
				}
				if a.Status != loophost.StatusRejected || a.Error == nil || a.Error.Code != api.CodeInvalidRequest || !strings.Contains(a.Error.Message, c.want) {
					msg := ""
					if a.Status == loophost.StatusAdmitted && export == "turn" {
						f, _ := h.Func(context.Background(), a.ID)
						_, err := f(context.Background(), newFake(), api.TurnInput{})
						msg = fmt.Sprintf("; a turn then failed with %v", err)
					}
					t.Errorf("%s module: admission %s %+v, want rejected as invalid_request naming %q%s", export, a.Status, a.Error, c.want, msg)
				}
			}
		})
	}
}

// allEvents answers every event of session sid.
func allEvents(t *testing.T, e *session.Engine, sid string) []api.Event {
	t.Helper()
	var out []api.Event
	for after := uint64(0); ; {
		page, err := e.Events(context.Background(), sid, after)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			return out
		}
		out = append(out, page.Events...)
		after = page.NextCursor
	}
}

// Guest JSON is UTF-8. A service input that is not (here an emit whose
// data holds a lone 0xff byte) is refused as invalid_request, and a turn
// answer that is not fails the activation: neither reaches the journal,
// whose events every client reads as UTF-8 JSON.
func TestGuestBytesThatAreNotUTF8(t *testing.T) {
	h := openHost(t, loophost.Options{})
	refused, accepted := `{"result":"refused"}`, `{"result":"accepted"}`
	answerBy := func(status []byte) []byte {
		// status (i32) selects refused (at 0) or accepted (at 32).
		return cat(status, []byte{0x04, 0x7e}, i64c(int64(len(refused))), []byte{0x05}, i64c(32<<32|int64(len(accepted))), []byte{0x0b})
	}
	emitData := "{\"event_type\":\"progress\",\"data\":\"a\xffb\"}"
	emitting := rawModule{imports: []string{"emit"}, pages: 1, alloc: i32c(1024),
		// emit(64, n) >> 32: the status of the call.
		entry: answerBy(cat(i32c(64), i32c(int32(len(emitData))), []byte{0x10, 0}, i64c(32), []byte{0x88, 0xa7})),
		data:  [][]byte{active(0, refused), active(32, accepted), active(64, emitData)}}
	result := "{\"result\":\"a\xffb\"}"
	answering := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(result))), data: [][]byte{active(0, result)}}

	e := engine(t, h, session.Limits{})
	for _, c := range []struct {
		name   string
		module rawModule
		want   string // the turn's failure code, or "" for none
	}{
		{"service input", emitting, ""},
		{"turn answer", answering, api.FailureAgentloopFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			sid := create(t, e, admit(t, h, c.module.bytes()))
			_, err := e.Send(context.Background(), sid, api.UserInput{Message: "hi"})
			var te *session.TurnError
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("send: %v", err)
			case c.want != "" && (!errors.As(err, &te) || te.Code != c.want):
				t.Fatalf("send answered %v, want the turn failed with %s", err, c.want)
			}
			for _, ev := range allEvents(t, e, sid) {
				if !utf8.Valid(ev.Data) {
					t.Errorf("event %d %s was committed with bytes that are not UTF-8: %q", ev.Sequence, ev.EventType, ev.Data)
				}
				if ev.EventType == api.KindTurnEnded && strings.Contains(string(ev.Data), "accepted") {
					t.Errorf("the guest's service call was accepted: %s", ev.Data)
				}
			}
		})
	}
}

// The same holds for a Tool: a service input that is not UTF-8 is refused
// before the engine sees it, and a run answer that is not fails the call
// with invalid_output.
func TestToolBytesThatAreNotUTF8(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	outcome := `{"outcome":{"status":"ok","value":1}}`
	emitData := "{\"event_type\":\"progress\",\"data\":\"a\xffb\"}"
	emitting := rawModule{imports: []string{"emit"}, pages: 1, alloc: i32c(1024), export: "run",
		entry: cat(i32c(64), i32c(int32(len(emitData))), []byte{0x10, 0, 0x1a}, i64c(int64(len(outcome)))),
		data:  [][]byte{active(0, outcome), active(64, emitData)}}
	bad := "{\"outcome\":{\"status\":\"ok\",\"value\":\"a\xffb\"}}"
	answering := rawModule{pages: 1, alloc: i32c(1024), export: "run", entry: i64c(int64(len(bad))), data: [][]byte{active(0, bad)}}
	admitTool := func(m rawModule) string {
		a, err := h.AdmitTool(context.Background(), m.bytes())
		if err != nil || a.Status != loophost.StatusAdmitted {
			t.Fatalf("admit: %+v %v", a, err)
		}
		return a.ID
	}

	svc := &toolServices{}
	r := h.RunTool(context.Background(), loophost.ToolCall{ID: admitTool(emitting), Services: svc})
	if len(svc.calls) != 0 {
		t.Errorf("the engine was called with %q", svc.calls)
	}
	if r.Type != envapi.ReceiptResult {
		t.Errorf("receipt %+v, want the outcome the Tool answered", r)
	}

	r = h.RunTool(context.Background(), loophost.ToolCall{ID: admitTool(answering)})
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeInvalidOutput {
		t.Errorf("receipt %+v (output %q), want failure %s", r, r.Output, envapi.CodeInvalidOutput)
	}
}

// A guest's failure message over 4096 bytes is cut at a character
// boundary: what is recorded is a prefix of what the guest said, never a
// character cut in two (which JSON would carry as U+FFFD).
func TestLongFailureMessageIsCutBetweenCharacters(t *testing.T) {
	msg := strings.Repeat("x", 4095) + "€ and more"
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	turnDoc := `{"error":{"message":"` + msg + `"}}`
	loop := rawModule{pages: 1, alloc: i32c(16 << 10), entry: i64c(int64(len(turnDoc))), data: [][]byte{active(0, turnDoc)}}
	e := engine(t, h, session.Limits{})
	sid := create(t, e, admit(t, h, loop.bytes()))
	if _, err := e.Send(context.Background(), sid, api.UserInput{Message: "hi"}); err == nil {
		t.Fatal("the turn succeeded")
	}
	for _, ev := range allEvents(t, e, sid) {
		if ev.EventType != api.KindActivationFailed {
			continue
		}
		var f api.Failure
		if err := json.Unmarshal(ev.Data, &f); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(msg, f.Message) || len(f.Message) < 4000 {
			t.Errorf("agentloop failure recorded with a message of %d bytes ending %q, want a prefix of the guest's", len(f.Message), f.Message[max(len(f.Message)-8, 0):])
		}
	}

	runDoc := `{"error":{"message":"` + msg + `"}}`
	tool := rawModule{pages: 1, alloc: i32c(16 << 10), export: "run", entry: i64c(int64(len(runDoc))), data: [][]byte{active(0, runDoc)}}
	a, err := h.AdmitTool(context.Background(), tool.bytes())
	if err != nil || a.Status != loophost.StatusAdmitted {
		t.Fatalf("admit: %+v %v", a, err)
	}
	r := h.RunTool(context.Background(), loophost.ToolCall{ID: a.ID})
	if r.Type != envapi.ReceiptFailure || !utf8.ValidString(r.Message) || !strings.HasPrefix(msg, r.Message) || len(r.Message) < 4000 {
		t.Errorf("tool failure %s with a message of %d bytes ending %q, want a prefix of the guest's", r.Code, len(r.Message), r.Message[max(len(r.Message)-8, 0):])
	}
}

// A guest that answers a result of 70 MiB has its turn failed by the
// agentloop, as a Tool's oversize answer is: the session records the
// failure and takes the next message, instead of failing to commit the
// turn's end and closing it as if a restart had interrupted it.
func TestGuestWithAHugeResult(t *testing.T) {
	h := openHost(t, loophost.Options{})
	const n = 70 << 20
	prefix, suffix := `{"result":"`, `"}`
	m := rawModule{
		pages: (n + 2<<20) / 65536,
		alloc: i32c(n + 1<<20),
		entry: cat(i32c(int32(len(prefix))), i32c('x'), i32c(n), memoryFill, i64c(int64(len(prefix)+n+len(suffix)))),
		data:  [][]byte{active(0, prefix), active(int32(len(prefix)+n), suffix)},
	}
	e := engine(t, h, session.Limits{})
	sid := create(t, e, admit(t, h, m.bytes()))
	_, err := e.Send(context.Background(), sid, api.UserInput{Message: "hi"})
	var te *session.TurnError
	if !errors.As(err, &te) || te.Code != api.FailureAgentloopFailed {
		t.Fatalf("send answered %.300v, want the turn failed with %s", err, api.FailureAgentloopFailed)
	}
	for _, ev := range allEvents(t, e, sid) {
		if ev.EventType == api.KindTurnFailed {
			var f api.Failure
			if err := json.Unmarshal(ev.Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Code != api.FailureAgentloopFailed || f.Ambiguous {
				t.Errorf("turn failed with %s (ambiguous %v): %s", f.Code, f.Ambiguous, f.Message)
			}
		}
	}
}

// A module whose data segment lies past the end of its initial memory
// compiles, but every instantiation of it fails: it is rejected at
// admission, as an agentloop and as a Tool, naming the segment, instead of
// being admitted and then failing every turn. A segment that ends exactly
// at the end of the initial memory is admitted and runs.
func TestAdmissionRefusesDataOutsideTheInitialMemory(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	// Memory index 0 given explicitly (segment flags 2).
	explicit := append([]byte{2, 0}, active(65530, "0123456789")[1:]...)
	for _, c := range []struct {
		name string
		data [][]byte
		want string
	}{
		{"crossing the end", [][]byte{active(0, "{}"), active(65530, "0123456789")}, "data segment 1"},
		{"negative offset", [][]byte{active(-1, "x")}, "data segment 0"},
		{"explicit memory index", [][]byte{explicit}, "data segment 0"},
		{"past a second page", [][]byte{active(3*65536, "x")}, "data segment 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, export := range []string{"turn", "run"} {
				m := rawModule{pages: 1, alloc: i32c(0), entry: i64c(2), export: export, data: c.data}
				admit := h.Admit
				if export == "run" {
					admit = h.AdmitTool
				}
				a, err := admit(context.Background(), m.bytes())
				if err != nil {
					t.Fatal(err)
				}
				if a.Status != loophost.StatusRejected || a.Error == nil || a.Error.Code != api.CodeInvalidRequest || !strings.Contains(a.Error.Message, c.want) {
					msg := ""
					if a.Status == loophost.StatusAdmitted && export == "turn" {
						f, _ := h.Func(context.Background(), a.ID)
						_, err := f(context.Background(), newFake(), input("hi"))
						msg = fmt.Sprintf("; a turn then failed with %v", err)
					}
					t.Errorf("%s module: admission %s %+v, want rejected as invalid_request naming %q%s", export, a.Status, a.Error, c.want, msg)
				}
			}
		})
	}

	m := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(2), data: [][]byte{active(0, "{}"), active(65534, "ab")}}
	f, err := h.Func(context.Background(), admit(t, h, m.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f(context.Background(), newFake(), input("hi")); err != nil {
		t.Errorf("a module whose data ends at the end of its memory: turn failed with %v", err)
	}
}
