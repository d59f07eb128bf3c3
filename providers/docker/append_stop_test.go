package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/docker/docker/client"
)

// stdinHold relays the Engine API over TCP. Once armed, the next exec
// start passes the first n bytes of the command's stdin and holds the
// rest until release is called (at the latest when the test ends); held
// is closed once the n bytes are passed.
type stdinHold struct {
	armed   atomic.Bool
	n       int64
	held    chan struct{}
	release func()
}

func stdinHoldingEngine(t *testing.T, engineHost string, n int64) (host string, h *stdinHold) {
	t.Helper()
	u, err := url.Parse(engineHost)
	if err != nil || u.Scheme != "unix" {
		t.Skipf("the Engine is not on a unix socket (%s)", engineHost)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	h = &stdinHold{n: n, held: make(chan struct{}), release: func() { once.Do(func() { close(release) }) }}
	t.Cleanup(func() { h.release(); ln.Close() })
	serve := func(c net.Conn) {
		defer c.Close()
		up, err := net.Dial("unix", u.Path)
		if err != nil {
			return
		}
		defer up.Close()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			start := strings.Contains(req.URL.Path, "/exec/") && strings.HasSuffix(req.URL.Path, "/start")
			if err := req.Write(up); err != nil {
				return
			}
			if !start {
				continue
			}
			// The connection now carries the command's stdin.
			if h.armed.CompareAndSwap(true, false) {
				if _, err := io.CopyN(up, br, h.n); err != nil {
					return
				}
				close(h.held)
				<-release
			}
			_, _ = io.Copy(up, br)
			_ = up.(*net.UnixConn).CloseWrite()
			<-release
			return
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return "tcp://" + ln.Addr().String(), h
}

// An append stopped part way, by a cancel or by its deadline, after some
// of its bytes reached the file, answers cancelled or timeout and leaves
// the file as it was (or absent, when the append created it); a later
// append works.
func TestAppendStoppedPartWayIsCutBack(t *testing.T) {
	for _, stop := range []string{"cancel", "deadline", "cancel-created"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			h, hold := stdinHoldingHarness(t)
			c := h.commands()
			h.setup(c, "")
			write := func(content string, appendTo bool, deadline *int64) envapi.Command {
				return c.Execute(tool(toolset.ToolWrite), mustJSON(toolset.WriteInput{Path: "f", Content: content, Append: appendTo}), deadline)
			}
			// size is the file's size, -1 while it does not exist.
			size := func() int64 {
				t.Helper()
				r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "f", Limit: 16}), nil))
				if r.Type == envapi.ReceiptFailure && r.Code == envapi.CodeNotFound {
					return -1
				}
				var out toolset.ReadOutput
				if r.Type != envapi.ReceiptResult || json.Unmarshal(r.Output, &out) != nil {
					t.Fatalf("read = %+v", r)
				}
				return out.Size
			}
			old := "old\n"
			if stop == "cancel-created" {
				old = ""
			} else if r := h.post(write(old, false, nil)); r.Type != envapi.ReceiptResult {
				t.Fatalf("write = %+v", r)
			}

			hold.armed.Store(true)
			var deadline *int64
			if stop == "deadline" {
				ms := int64(3000)
				deadline = &ms
			}
			cmd := write(strings.Repeat("x", 256<<10), true, deadline)
			seq := cmd.Operation.Sequence
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Posted apart from the test's goroutine, which alone may
			// fail the test.
			type answer struct {
				r   envapi.Receipt
				err error
			}
			done := make(chan answer, 1)
			go func() {
				status, body, resp, err := envtest.Post(ctx, nil, h.url, testToken, cmd)
				if err == nil && (status != 200 || resp == nil) {
					err = fmt.Errorf("status %d: %s", status, body)
				}
				var r envapi.Receipt
				if resp != nil {
					r = resp.Receipt
				}
				done <- answer{r, err}
			}()
			select {
			case <-hold.held:
			case <-ctx.Done():
				t.Fatal("the append never started")
			}
			// Part of the append is in the file. The bytes may be passed
			// on before the script has opened the file: the append that
			// creates it may not have created it yet.
			for size() != int64(len(old))+hold.n {
				select {
				case a := <-done:
					t.Fatalf("the append answered %+v (%v) before its bytes reached the file", a.r, a.err)
				case <-ctx.Done():
					t.Fatalf("the file never grew to %d bytes", int64(len(old))+hold.n)
				case <-time.After(20 * time.Millisecond):
				}
			}
			want := envapi.CodeTimeout
			if stop != "deadline" {
				want = envapi.CodeCancelled
				if r := h.post(c.Cancel(seq)); r.Type != envapi.ReceiptAccepted {
					t.Fatalf("cancel = %+v", r)
				}
			}
			select {
			case a := <-done:
				if a.err != nil {
					t.Fatalf("append: %v", a.err)
				}
				failure(t, a.r, want)
			case <-ctx.Done():
				t.Fatal("the stopped append never answered")
			}
			if old == "" {
				r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "f", Limit: 16}), nil))
				failure(t, r, envapi.CodeNotFound)
			} else if n := size(); n != int64(len(old)) {
				t.Fatalf("after the stopped append the file holds %d bytes, want its old %d", n, len(old))
			}
			if r := h.post(write("new\n", true, nil)); r.Type != envapi.ReceiptResult {
				t.Fatalf("append after the stopped one = %+v", r)
			}
			r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "f"}), nil))
			var out toolset.ReadOutput
			if json.Unmarshal(r.Output, &out) != nil || out.Content != old+"new\n" {
				t.Fatalf("read = %+v, want %q", r, old+"new\n")
			}
		})
	}
}

// stdinHoldingHarness is a harness whose provider reaches the Engine
// through stdinHoldingEngine (64 KiB of each exec's stdin go through, the
// rest is held until hold.release).
func stdinHoldingHarness(t *testing.T) (*harness, *stdinHold) {
	t.Helper()
	engine, image := testEngine(t)
	host, hold := stdinHoldingEngine(t, engine.DaemonHost(), 64<<10)
	cli, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	p, err := New(Config{Profiles: testProfiles(image), StateDir: t.TempDir(), Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	cleanupInstance(t, engine, p.Instance())
	srv := httptest.NewServer(p.Handler(testToken))
	t.Cleanup(srv.Close)
	// The held stdin is let go before the server closes (cleanups run
	// last first): Close waits for the request of a command stopped
	// part-way, which a test that failed would leave waiting for stdin.
	t.Cleanup(hold.release)
	return &harness{t: t, p: p, url: srv.URL, brain: envtest.NewBrain(t)}, hold
}
