package loophost_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

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
	if len(m.imports) > 0 {
		imp := binary.AppendUvarint(nil, uint64(len(m.imports)))
		for _, n := range m.imports {
			imp = name(imp, "brain")
			imp = name(imp, n)
			t := byte(0)
			if n == "answer" {
				t = 2
			}
			imp = append(imp, 0, t)
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
