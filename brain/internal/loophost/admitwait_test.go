package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// answering is a module whose entrypoint (export, "turn" when empty)
// answers doc.
func answering(export, doc string) []byte {
	return rawModule{pages: 1, alloc: i32c(1024), export: export, entry: i64c(int64(len(doc))), data: [][]byte{active(0, doc)}}.bytes()
}

// gatedShared is memShared whose PutModule holds its caller, an
// admission, until release is closed: a cluster's store slow to answer.
type gatedShared struct {
	memShared
	entered chan struct{} // a value for each PutModule entered
	release chan struct{}
	open    func() // closes release, once
}

func newGatedShared() *gatedShared {
	g := &gatedShared{entered: make(chan struct{}, 16), release: make(chan struct{})}
	g.open = sync.OnceFunc(func() { close(g.release) })
	return g
}

func (g *gatedShared) PutModule(ctx context.Context, b []byte) (string, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.memShared.PutModule(ctx, b)
}

// promptly runs f and fails the test when it has not returned within
// five seconds (it is then left to return when it can).
func promptly(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("%s still waits after 5s", what)
	}
}

// holdAdmission starts an admission on h, whose Options.Shared is g, and
// answers once it holds the admission lock (it is storing its module in
// g); the admission ends when the test releases g, before h is closed.
func holdAdmission(t *testing.T, h *loophost.Host, g *gatedShared) {
	t.Helper()
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = h.Admit(context.Background(), answering("", `{"result":"held"}`))
	}()
	<-g.entered
	t.Cleanup(func() {
		g.open()
		<-held
	})
}

// Admissions run one at a time, but a caller waits for the one under way
// only as long as its context lasts: behind a module that takes seconds
// to compile, an admission whose deadline passes or that is cancelled
// answers its context's error at once, and nothing is remembered of the
// module it brought.
func TestAdmissionWaitEndsWithItsContext(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir(), CacheDir: t.TempDir()})
	large := rawModule{pages: 1, alloc: i32c(0), entry: cat(emptyBlocks(8000), i64c(0))}.bytes()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if a, err := h.Admit(context.Background(), large); err != nil || a.Status != loophost.StatusAdmitted {
			t.Errorf("the large module: %+v %v, want admitted", a, err)
		}
	}()
	for h.Compiles() == 0 {
		select {
		case <-done:
			t.Fatal("the large module was admitted before anything could wait for it")
		case <-time.After(time.Millisecond):
		}
	}

	expired, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	loop, tool := answering("", `{"result":1}`), answering("run", `{"outcome":{"status":"ok","value":1}}`)
	for _, c := range []struct {
		name   string
		ctx    context.Context
		admit  func(context.Context, []byte) (loophost.Admission, error)
		module []byte
		want   error
	}{
		{"an agentloop admission past its deadline", expired, h.Admit, loop, context.DeadlineExceeded},
		{"a cancelled Tool admission", cancelled, h.AdmitTool, tool, context.Canceled},
	} {
		start := time.Now()
		a, err := c.admit(c.ctx, c.module)
		select {
		case <-done:
			t.Errorf("%s answered after %v, once the large module was admitted", c.name, time.Since(start).Round(time.Millisecond))
		default:
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s answered %+v %v, want %v", c.name, a, err, c.want)
		}
	}
	<-done
	if _, ok := h.Admission(sha(loop)); ok {
		t.Error("the agentloop whose admission gave up is remembered")
	}
	if _, ok := h.ToolAdmission(sha(tool)); ok {
		t.Error("the Tool whose admission gave up is remembered")
	}
}

// A module admitted on another node is compiled here, after the admission
// under way, when it is first named; every caller naming one waits for
// that admission only as long as its context, or its Tool's deadline,
// lasts: GET answers its context's error, a Tool's execute timeout when
// its deadline passes and cancelled when it is cancelled, through RunTool
// and through the built-in environment (whose cancel operation reaches an
// execute still waiting). Once the admission ends, the modules are
// fetched and run as ever.
func TestLookupsWaitingForAnAdmissionEndWithTheirContext(t *testing.T) {
	loops, tools := newGatedShared(), &memShared{}
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir(), CacheDir: t.TempDir(), Shared: loops, SharedTools: tools})
	loopID, _ := loops.memShared.PutModule(context.Background(), answering("", `{"result":1}`))
	toolID, _ := tools.PutModule(context.Background(), answering("run", `{"outcome":{"status":"ok","value":1}}`))
	holdAdmission(t, h, loops)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	promptly(t, "Find, cancelled", func() {
		if a, ok, err := h.Find(cancelled, loopID); !errors.Is(err, context.Canceled) {
			t.Errorf("Find, cancelled = %+v %v %v, want context.Canceled", a, ok, err)
		}
	})
	promptly(t, "FindTool past its deadline", func() {
		if a, ok, err := h.FindTool(expired, toolID); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("FindTool past its deadline = %+v %v %v, want context.DeadlineExceeded", a, ok, err)
		}
	})
	promptly(t, "RunTool past the Tool's deadline", func() {
		r := h.RunTool(context.Background(), loophost.ToolCall{ID: toolID, Deadline: time.Now().Add(50 * time.Millisecond)})
		if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
			t.Errorf("RunTool past the Tool's deadline = %+v, want failure timeout", r)
		}
	})
	promptly(t, "RunTool, cancelled", func() {
		if r := h.RunTool(cancelled, loophost.ToolCall{ID: toolID}); r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeCancelled {
			t.Errorf("RunTool, cancelled = %+v, want failure cancelled", r)
		}
	})

	e := h.Environments(nil)
	local := api.Environment{Name: "local", Driver: api.DriverBrain}
	ms := int64(50)
	promptly(t, "an execute past its deadline", func() {
		r, err := e.Deliver(context.Background(), op(local, envapi.Execute(impl(toolID, ""), nil, &ms, nil)))
		if err != nil || r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
			t.Errorf("an execute past its deadline = %+v %v, want failure timeout", r, err)
		}
	})
	execute := op(local, envapi.Execute(impl(toolID, ""), nil, nil, nil))
	answered := make(chan envapi.Receipt, 1)
	go func() {
		r, _ := e.Deliver(context.Background(), execute)
		answered <- r
	}()
	cancelOp := op(local, envapi.Cancel(execute.Sequence))
	cancelOp.Sequence = execute.Sequence + 1
	giveUp := time.After(5 * time.Second)
cancelling:
	for {
		if _, err := e.Deliver(context.Background(), cancelOp); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-answered:
			if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeCancelled {
				t.Errorf("a cancelled execute = %+v, want failure cancelled", r)
			}
			break cancelling
		case <-giveUp:
			t.Error("a cancelled execute still waits after 5s")
			break cancelling
		case <-time.After(20 * time.Millisecond):
		}
	}
	if t.Failed() {
		return
	}

	loops.open()
	if a, ok, err := h.Find(context.Background(), loopID); err != nil || !ok || a.Status != loophost.StatusAdmitted {
		t.Errorf("Find once the admission ended = %+v %v %v, want admitted", a, ok, err)
	}
	if got := okValue(t, h.RunTool(context.Background(), loophost.ToolCall{ID: toolID, Input: json.RawMessage(`null`)})); got != "1" {
		t.Errorf("RunTool once the admission ended = %s, want 1", got)
	}
}
