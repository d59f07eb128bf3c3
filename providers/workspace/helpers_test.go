package workspace

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// fixture is a provider served on loopback with a fake Brain.
type fixture struct {
	t     *testing.T
	p     *Provider
	url   string
	brain *envtest.Brain
	root  string
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	srv := httptest.NewServer(p.Handler("secret-token"))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { killMarked(t, opts.Root) })
	return &fixture{t: t, p: p, url: srv.URL, brain: envtest.NewBrain(t), root: opts.Root}
}

// restart serves a new Provider on the same root, as after a process restart.
func (f *fixture) restart(opts Options) *fixture {
	f.t.Helper()
	opts.Root = f.root
	if err := f.p.Close(); err != nil {
		f.t.Fatal(err)
	}
	g := newFixture(f.t, opts)
	return g
}

func (f *fixture) commands(session string) *envtest.Commands {
	c := envtest.NewCommands(session, "workspace")
	c.Brain = f.brain
	return c
}

// post sends cmd and returns the receipt.
func (f *fixture) post(cmd envapi.Command) envapi.Receipt {
	f.t.Helper()
	return f.postCtx(f.t.Context(), cmd)
}

func (f *fixture) postCtx(ctx context.Context, cmd envapi.Command) envapi.Receipt {
	f.t.Helper()
	status, body, resp, err := envtest.Post(ctx, nil, f.url, "secret-token", cmd)
	if err != nil {
		f.t.Fatalf("post %s: %v", cmd.Operation.Request.Type, err)
	}
	if resp == nil {
		f.t.Fatalf("post %s: status %d: %s", cmd.Operation.Request.Type, status, body)
	}
	if resp.Sequence != cmd.Operation.Sequence {
		f.t.Fatalf("response sequence %d, want %d", resp.Sequence, cmd.Operation.Sequence)
	}
	return resp.Receipt
}

func tool(name string) json.RawMessage { return json.RawMessage(`{"tool":"` + name + `"}`) }

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// exec runs a tool and returns its receipt.
func (f *fixture) exec(c *envtest.Commands, name string, input any, deadlineMs *int64) envapi.Receipt {
	f.t.Helper()
	return f.post(c.Execute(tool(name), mustJSON(f.t, input), deadlineMs))
}

// ok asserts a result receipt and decodes its output into v (may be nil).
func ok(t testing.TB, r envapi.Receipt, v any) {
	t.Helper()
	if r.Type != envapi.ReceiptResult {
		t.Fatalf("receipt %s %s: %s (details %s), want result", r.Type, r.Code, r.Message, r.Details)
	}
	if v != nil {
		if err := json.Unmarshal(r.Output, v); err != nil {
			t.Fatalf("decode output %s: %v", r.Output, err)
		}
	}
}

// fails asserts a failure receipt with code.
func fails(t testing.TB, r envapi.Receipt, code string) {
	t.Helper()
	if r.Type != envapi.ReceiptFailure || r.Code != code {
		t.Fatalf("receipt %s %s: %s (details %s), want failure %s", r.Type, r.Code, r.Message, r.Details, code)
	}
}

func accepted(t testing.TB, r envapi.Receipt) {
	t.Helper()
	if r.Type != envapi.ReceiptAccepted {
		t.Fatalf("receipt %s %s: %s, want accepted", r.Type, r.Code, r.Message)
	}
}

func sh(line string) map[string]any { return map[string]any{"shell": line} }

// killMarked kills the commands of the provider rooted at root, so that a
// failing test leaves nothing behind.
func killMarked(t *testing.T, root string) {
	for _, pid := range markedProcesses(t, root) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// startUnprivilegedSession serves the provider with startUnprivileged and
// returns a function posting a command to it and answering the receipt,
// the commands of a session s1 (with a fake Brain), and the root.
func startUnprivilegedSession(t *testing.T) (post func(envapi.Command) envapi.Receipt, c *envtest.Commands, root string) {
	t.Helper()
	url, root := startUnprivileged(t)
	c = envtest.NewCommands("s1", "workspace")
	c.Brain = envtest.NewBrain(t)
	post = func(cmd envapi.Command) envapi.Receipt {
		t.Helper()
		return postTo(t, url, cmd)
	}
	return post, c, root
}
