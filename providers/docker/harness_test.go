package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

const testToken = "test-token"

// harness is a provider served over HTTP with a fake Brain.
type harness struct {
	t     *testing.T
	p     *Provider
	url   string
	brain *envtest.Brain
}

func testProfiles(image string) Profiles {
	return Profiles{
		"default": {Image: image},
		"reader":  {Image: image, Workspace: WorkspaceRead},
		"missing": {Image: "brain-docker-test:absent"},
		"envs":    {Image: image, EnvAllow: []string{"GREETING"}, OutputBytes: 64},
		"short":   {Image: image, EnvAllow: []string{"b", "c", "f", "t", "A", "nl"}},
	}
}

func newHarness(t *testing.T, stateDir string) *harness {
	t.Helper()
	cli, _ := testEngine(t)
	return newHarnessOn(t, stateDir, cli)
}

// newHarnessOn is newHarness with a provider that reaches the Engine
// through cli (a relay, say).
func newHarnessOn(t *testing.T, stateDir string, cli *client.Client) *harness {
	t.Helper()
	_, image := testEngine(t)
	return newHarnessWith(t, stateDir, cli, testProfiles(image))
}

// newHarnessWith is newHarnessOn with the operator's profiles.
func newHarnessWith(t *testing.T, stateDir string, cli *client.Client, profiles Profiles) *harness {
	t.Helper()
	return newHarnessConfig(t, Config{Profiles: profiles, StateDir: stateDir, Client: cli})
}

// newHarnessConfig is newHarnessWith with the whole of the operator's
// configuration (an empty StateDir: a new one).
func newHarnessConfig(t *testing.T, cfg Config) *harness {
	t.Helper()
	engineCli, _ := testEngine(t)
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	cleanupInstance(t, engineCli, p.Instance())
	srv := httptest.NewServer(p.Handler(testToken))
	t.Cleanup(srv.Close)
	return &harness{t: t, p: p, url: srv.URL, brain: envtest.NewBrain(t)}
}

var sessionCounter atomic.Int64

// commands returns commands for a fresh session with grants from the fake
// Brain.
func (h *harness) commands() *envtest.Commands {
	c := envtest.NewCommands(fmt.Sprintf("%s-%d", strings.ReplaceAll(h.t.Name(), "/", "-"), sessionCounter.Add(1)), "box")
	c.Brain = h.brain
	return c
}

func (h *harness) post(cmd envapi.Command) envapi.Receipt {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	status, body, resp, err := envtest.Post(ctx, nil, h.url, testToken, cmd)
	if err != nil || status != 200 || resp == nil {
		h.t.Fatalf("POST %s: status %d, %v: %s", cmd.Operation.Request.Type, status, err, body)
	}
	return resp.Receipt
}

// postAsync posts cmd from a goroutine and answers the channel its
// receipt arrives on (an empty receipt, the test failed, when the post
// did).
func (h *harness) postAsync(cmd envapi.Command) <-chan envapi.Receipt {
	answered := make(chan envapi.Receipt, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, body, resp, err := envtest.Post(ctx, nil, h.url, testToken, cmd)
		if err != nil || resp == nil {
			h.t.Errorf("POST %s: %v: %s", cmd.Operation.Request.Type, err, body)
			answered <- envapi.Receipt{}
			return
		}
		answered <- resp.Receipt
	}()
	return answered
}

// setup sets a binding up with profile and fails the test unless accepted.
func (h *harness) setup(c *envtest.Commands, profile string) {
	h.t.Helper()
	cfg := json.RawMessage(`{}`)
	if profile != "" {
		cfg = json.RawMessage(`{"profile":"` + profile + `"}`)
	}
	if r := h.post(c.Setup(cfg)); r.Type != envapi.ReceiptAccepted {
		h.t.Fatalf("setup = %+v", r)
	}
}

func tool(name string) json.RawMessage { return json.RawMessage(`{"tool":"` + name + `"}`) }

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// shell runs a shell line and decodes its output; it fails the test
// unless the receipt is a result.
func (h *harness) shell(c *envtest.Commands, line string) toolset.CommandOutput {
	h.t.Helper()
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: line}), nil))
	return h.commandOutput(r)
}

func (h *harness) commandOutput(r envapi.Receipt) toolset.CommandOutput {
	h.t.Helper()
	if r.Type != envapi.ReceiptResult {
		h.t.Fatalf("execute = %+v, want a result", r)
	}
	var out toolset.CommandOutput
	if err := json.Unmarshal(r.Output, &out); err != nil {
		h.t.Fatalf("command output %s: %v", r.Output, err)
	}
	return out
}

// failure fails the test unless r is a failure with code.
func failure(t *testing.T, r envapi.Receipt, code string) {
	t.Helper()
	if r.Type != envapi.ReceiptFailure || r.Code != code {
		t.Fatalf("receipt = %+v, want failure %s", r, code)
	}
}

// bindingKey is the key of c's binding.
func bindingKey(c *envtest.Commands) string { return c.Session + "/" + c.Environment }

// bindingResources counts the binding's labelled containers and volumes.
func (h *harness) bindingResources(c *envtest.Commands) (containers, volumes int) {
	return countLabelled(h.t, h.p.cli, bindingFilter(h.p.instance, bindingKey(c)))
}

// processes lists the processes in the binding's container (besides ps).
func (h *harness) processes(c *envtest.Commands) string {
	h.t.Helper()
	out := h.shell(c, "ps -o pid,pgid,args | grep -v -e 'ps -o' -e grep")
	return out.Stdout
}

// runningExecs counts the execs still running in the binding's container.
func (h *harness) runningExecs(c *envtest.Commands) int {
	h.t.Helper()
	ctx := context.Background()
	st, ok, err := h.p.store.get(bindingKey(c))
	if err != nil || !ok {
		h.t.Fatalf("state of %s: %v %v", bindingKey(c), ok, err)
	}
	info, err := h.p.cli.ContainerInspect(ctx, st.resourceName())
	if err != nil {
		h.t.Fatalf("inspect container: %v", err)
	}
	n := 0
	for _, id := range info.ExecIDs {
		ex, err := h.p.cli.ContainerExecInspect(ctx, id)
		if err == nil && ex.Running {
			n++
		}
	}
	return n
}

// relayClient is an Engine client that connects to host (a relay of
// gatedEngine or stallingEngine).
func relayClient(t *testing.T, host string) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
