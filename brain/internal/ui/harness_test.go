package ui_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/httpapi"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// emitLoop is an agentloop that commits as many extension events as its
// message says (a number), each {"i": n}, and answers "done". The message
// "model" makes it call the session's model once instead, and "phases"
// makes it emit extension events named like Brain's own records (see
// emitPhases). The message "blob N" makes it emit one "blob" event whose
// text is N characters of "abcdefghij" repeated, and "paced N" makes it
// emit N "progress" events 20 ms apart, as a tool's output streams.
func emitLoop(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
	if in.Input != nil && strings.HasPrefix(in.Input.Message, "paced ") {
		n, err := strconv.Atoi(strings.TrimPrefix(in.Input.Message, "paced "))
		if err != nil {
			return api.TurnOutput{}, err
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := range n {
			select {
			case <-ctx.Done():
				return api.TurnOutput{}, ctx.Err()
			case <-tick.C:
			}
			if _, err := svc.Emit(ctx, "progress", json.RawMessage(`{"i":`+strconv.Itoa(i)+`}`)); err != nil {
				return api.TurnOutput{}, err
			}
		}
		return api.TurnOutput{Result: json.RawMessage(`"done"`)}, nil
	}
	if in.Input != nil && strings.HasPrefix(in.Input.Message, "blob ") {
		n, err := strconv.Atoi(strings.TrimPrefix(in.Input.Message, "blob "))
		if err != nil {
			return api.TurnOutput{}, err
		}
		data, err := json.Marshal(map[string]string{"text": strings.Repeat("abcdefghij", n/10+1)[:n]})
		if err != nil {
			return api.TurnOutput{}, err
		}
		if _, err := svc.Emit(ctx, "blob", data); err != nil {
			return api.TurnOutput{}, err
		}
		return api.TurnOutput{Result: json.RawMessage(`"done"`)}, nil
	}
	if in.Input != nil && in.Input.Message == "model" {
		if _, err := svc.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(*in.Input)}}); err != nil {
			return api.TurnOutput{}, err
		}
		return api.TurnOutput{Result: json.RawMessage(`"done"`)}, nil
	}
	if in.Input != nil && in.Input.Message == "phases" {
		if err := emitPhases(ctx, svc); err != nil {
			return api.TurnOutput{}, err
		}
		return api.TurnOutput{Result: json.RawMessage(`"done"`)}, nil
	}
	n := 0
	if in.Input != nil {
		n, _ = strconv.Atoi(in.Input.Message)
	}
	for i := range n {
		if _, err := svc.Emit(ctx, "progress", json.RawMessage(`{"i":`+strconv.Itoa(i)+`}`)); err != nil {
			return api.TurnOutput{}, err
		}
	}
	return api.TurnOutput{Result: json.RawMessage(`"done"`)}, nil
}

// emitPhases emits extension events whose names end like the records
// that open and close Brain's own entries: upload_started, never ended,
// and step_failed naming the running turn's turn_started sequence.
func emitPhases(ctx context.Context, svc agentloop.Services) error {
	if _, err := svc.Emit(ctx, "upload_started", json.RawMessage(`{"file":"a.txt"}`)); err != nil {
		return err
	}
	var turn uint64
	for after := uint64(0); ; {
		page, err := svc.Events(ctx, after)
		if err != nil {
			return err
		}
		if len(page.Events) == 0 {
			break
		}
		for _, ev := range page.Events {
			if ev.EventType == api.KindTurnStarted {
				turn = ev.Sequence
			}
		}
		after = page.NextCursor
	}
	data, err := json.Marshal(map[string]any{"sequence": turn, "code": "step_broke", "message": "a step of the loop's own"})
	if err != nil {
		return err
	}
	_, err = svc.Emit(ctx, "step_failed", data)
	return err
}

// inProcess is a Brain served from the test process over a memory
// journal: its sessions run emitLoop.
type inProcess struct {
	url    string
	engine *session.Engine
}

// serveInProcess starts an in-process Brain with the token and the
// heartbeat of idle event streams.
func serveInProcess(t *testing.T, token string, heartbeat time.Duration) *inProcess {
	t.Helper()
	return serveWithModels(t, token, heartbeat, nil)
}

// serveWithModels is serveInProcess with the sessions' models opened by
// models (nil: the scripted model).
func serveWithModels(t *testing.T, token string, heartbeat time.Duration, models model.Opener) *inProcess {
	t.Helper()
	return serveOn(t, nil, token, heartbeat, models)
}

// serveOn is serveWithModels listening on what listen makes of the test
// server's listener (nil: that listener), its engine configured further
// by each of configure.
func serveOn(t *testing.T, listen func(net.Listener) net.Listener, token string, heartbeat time.Duration, models model.Opener, configure ...func(*session.Config)) *inProcess {
	t.Helper()
	cfg := session.Config{
		Store:   journal.NewMemStore(),
		IdleTTL: session.KeepIdle,
		Models:  models,
		Loops: func(_ context.Context, impl []byte) (agentloop.Func, error) {
			if string(impl) != `{"type":"emit"}` {
				return nil, errors.New("unknown loop")
			}
			return emitLoop, nil
		},
	}
	for _, c := range configure {
		c(&cfg)
	}
	eng, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := idem.Open(filepath.Join(t.TempDir(), "requests.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Options{Engine: eng, Requests: idem.FileRequests(req), Token: token, Heartbeat: heartbeat})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv)
	if listen != nil {
		hs.Listener = listen(hs.Listener)
	}
	hs.Start()
	t.Cleanup(func() {
		srv.Drain()
		srv.CloseStreams()
		hs.Close()
		_ = eng.Close(context.Background())
		req.Close()
	})
	return &inProcess{url: hs.URL, engine: eng}
}

// smallSendBuffers makes the connections ln accepts buffer at most about
// size bytes that the server sends and the peer has not taken, so that a
// reader that falls behind is soon behind the server's own queue.
func smallSendBuffers(size int) func(net.Listener) net.Listener {
	return func(ln net.Listener) net.Listener { return sendBufferListener{ln, size} }
}

type sendBufferListener struct {
	net.Listener
	size int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetWriteBuffer(l.size); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, err
}

// session creates a session that runs emitLoop and answers its id.
func (b *inProcess) session(t *testing.T) string {
	t.Helper()
	id := session.NewSessionID()
	_, err := b.engine.Create(context.Background(), id, api.CreateSessionRequest{
		Agentloop: &api.Agentloop{Implementation: json.RawMessage(`{"type":"emit"}`)},
		Model:     api.ModelConfig{Provider: "scripted", Name: "m"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// emit runs one turn of session id that commits n extension events and
// answers the session's last sequence.
func (b *inProcess) emit(t *testing.T, id string, n int) uint64 {
	t.Helper()
	sum, err := b.engine.Send(context.Background(), id, api.UserInput{Message: strconv.Itoa(n)})
	if err != nil {
		t.Fatal(err)
	}
	return sum.LastSequence
}

// lastOf answers the sequence of the last event of the kind among the
// newest events of session id.
func (b *inProcess) lastOf(t *testing.T, id, kind string) uint64 {
	t.Helper()
	sum, err := b.engine.Summary(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	page, err := b.engine.Events(context.Background(), id, sum.LastSequence-min(sum.LastSequence, 50))
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	for _, ev := range page.Events {
		if ev.EventType == kind {
			seq = ev.Sequence
		}
	}
	if seq == 0 {
		t.Fatalf("no %s event among the newest of %s", kind, id)
	}
	return seq
}

// browser is a headless Chromium tab.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// newBrowser opens a tab of a headless Chromium started with the options
// more as well.
func newBrowser(t *testing.T, timeout time.Duration, more ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	opts = append(opts, more...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(cancelCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelTimeout)
	return &browser{t: t, ctx: ctx}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	var page string
	if raw, e := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](`(() => { const m = document.querySelector('main').cloneNode(true);
		for (const id of ['timeline', 'events']) { const e = m.querySelector('#' + id); if (e && e.textContent.length > 4000) e.textContent = '(' + e.textContent.length + ' characters)'; }
		return m.outerHTML; })()`)); e == nil {
		_ = json.Unmarshal(raw, &page)
	}
	b.t.Fatalf("%s: %v\npage:\n%s", what, err, page)
}

func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

func (b *browser) eval(expr string, v any) {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](expr))
	if err == nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		b.fail("evaluate "+expr, err)
	}
}

// wait polls expr until it is true or the timeout passes.
func (b *browser) wait(what, expr string, timeout time.Duration) {
	b.t.Helper()
	b.run(what, void(chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(10*time.Millisecond))))
}

// login opens the inspector at base with the token stored for the tab.
func (b *browser) login(base, token string) {
	b.t.Helper()
	b.run("open the page", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	var ok bool
	b.eval(`sessionStorage.setItem('brain.inspector.token', `+strconv.Quote(token)+`), true`, &ok)
}
