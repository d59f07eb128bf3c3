package docker

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

func TestSetupValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	for _, tc := range []struct {
		name, cfg, code string
	}{
		{"unknown profile", `{"profile":"nope"}`, envapi.CodeUnsupported},
		{"unknown field", `{"image":"x"}`, envapi.CodeInvalidConfiguration},
		{"wrong type", `{"profile":7}`, envapi.CodeInvalidConfiguration},
		{"missing image", `{"profile":"missing"}`, envapi.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.commands()
			failure(t, h.post(c.Setup(json.RawMessage(tc.cfg))), tc.code)
			// A failed setup leaves no binding behind.
			failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil)), envapi.CodeUnavailable)
		})
	}
	c := h.commands()
	h.setup(c, "")
	failure(t, h.post(c.Setup(nil)), envapi.CodeAlreadyExists)
	st, ok, err := h.p.store.get(bindingKey(c))
	if err != nil || !ok || !strings.HasPrefix(st.ImageID, "sha256:") || st.Phase != phaseNew {
		t.Fatalf("state after setup = %+v, %v, %v; want a pinned image ID and phase new", st, ok, err)
	}
	if n, v := h.bindingResources(c); n != 0 || v != 0 {
		t.Fatalf("setup allocated %d containers, %d volumes; want none", n, v)
	}
}

func TestConcurrentFirstExecutesShareOneAllocation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	const n = 4
	var wg sync.WaitGroup
	outs := make([]envapi.Receipt, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo $HOSTNAME >> hosts"}), nil))
		}()
	}
	wg.Wait()
	for _, r := range outs {
		if out := h.commandOutput(r); out.ExitCode != 0 {
			t.Fatalf("concurrent first execute = %+v", out)
		}
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 1 || vols != 1 {
		t.Fatalf("binding has %d containers and %d volumes; want one of each", ctrs, vols)
	}
	out := h.shell(c, "sort -u hosts | wc -l; wc -l < hosts")
	if out.Stdout != "1\n4\n" {
		t.Fatalf("hosts seen = %q; want one host, four writes", out.Stdout)
	}
	if st, _, _ := h.p.store.get(bindingKey(c)); st.Phase != phaseReady {
		t.Fatalf("phase = %s, want ready", st.Phase)
	}
}

func TestHardeningAndIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	a, b, r := h.commands(), h.commands(), h.commands()
	h.setup(a, "")
	h.setup(b, "")
	h.setup(r, "reader")

	t.Run("bindings cannot read each other's files", func(t *testing.T) {
		if out := h.shell(a, "echo secret > mine && cat mine"); out.Stdout != "secret\n" {
			t.Fatalf("write in a = %+v", out)
		}
		out := h.shell(b, "ls -a /workspace; cat /workspace/mine")
		if strings.Contains(out.Stdout, "secret") || strings.Contains(out.Stdout, "mine") || out.Stderr == "" {
			t.Fatalf("binding b sees a's file: %+v", out)
		}
		failure(t, h.post(b.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "mine"}), nil)), envapi.CodeNotFound)
	})
	t.Run("a read profile cannot write", func(t *testing.T) {
		out := h.shell(r, "echo x > /workspace/f && echo wrote")
		if out.ExitCode == 0 || strings.Contains(out.Stdout, "wrote") || !strings.Contains(out.Stderr, "Read-only") {
			t.Fatalf("write on a read profile = %+v", out)
		}
		failure(t, h.post(r.Execute(tool(toolset.ToolWrite), mustJSON(toolset.WriteInput{Path: "f", Content: "x"}), nil)), codeReadOnly)
	})
	t.Run("network is denied by default", func(t *testing.T) {
		out := h.shell(a, "wget -q -T 2 -O- http://172.17.0.1/ 2>&1 || echo denied; tail -n +3 /proc/net/dev | cut -d: -f1")
		if !strings.Contains(out.Stdout, "denied") || strings.TrimSpace(strings.Split(out.Stdout, "denied\n")[1]) != "lo" {
			t.Fatalf("network probe = %+v; want denied and only lo", out)
		}
	})
	t.Run("hardened", func(t *testing.T) {
		out := h.shell(a, "id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; touch /etc/x 2>&1; cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes")
		want := []string{"1000\n", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Read-only file system", "64\n", "268435456\n"}
		for _, w := range want {
			if !strings.Contains(out.Stdout, w) {
				t.Errorf("hardening probe lacks %q:\n%s", w, out.Stdout)
			}
		}
	})
}

func TestFileTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	exec := func(name string, in any) envapi.Receipt {
		return h.post(c.Execute(tool(name), mustJSON(in), nil))
	}
	decode := func(r envapi.Receipt, v any) {
		t.Helper()
		if r.Type != envapi.ReceiptResult {
			t.Fatalf("receipt = %+v", r)
		}
		if err := json.Unmarshal(r.Output, v); err != nil {
			t.Fatal(err)
		}
	}
	var w toolset.WriteOutput
	decode(exec(toolset.ToolWrite, toolset.WriteInput{Path: "dir/sub/a.txt", Content: "hello world\n"}), &w)
	if w.Bytes != 12 {
		t.Fatalf("write = %+v", w)
	}
	var e toolset.EditOutput
	decode(exec(toolset.ToolEdit, toolset.EditInput{Path: "dir/sub/a.txt", Old: "world", New: "docker"}), &e)
	var rd toolset.ReadOutput
	decode(exec(toolset.ToolRead, toolset.ReadInput{Path: "dir/sub/a.txt"}), &rd)
	if rd.Content != "hello docker\n" || rd.Encoding != "utf8" || rd.Size != 13 || rd.Truncated {
		t.Fatalf("read = %+v", rd)
	}
	decode(exec(toolset.ToolRead, toolset.ReadInput{Path: "dir/sub/a.txt", Offset: 6, Limit: 3}), &rd)
	if rd.Content != "doc" || !rd.Truncated {
		t.Fatalf("read with offset and limit = %+v", rd)
	}
	// A limit that ends inside a character: the text before it, as text.
	decode(exec(toolset.ToolWrite, toolset.WriteInput{Path: "accents.txt", Content: "café crème"}), &w)
	decode(exec(toolset.ToolRead, toolset.ReadInput{Path: "accents.txt", Limit: 4}), &rd)
	if rd.Content != "caf" || rd.Encoding != "utf8" || !rd.Truncated {
		t.Fatalf("read cut inside a character = %+v, want the text before it", rd)
	}
	var ls toolset.ListOutput
	decode(exec(toolset.ToolList, toolset.ListInput{Recursive: true}), &ls)
	got := map[string]string{}
	for _, en := range ls.Entries {
		got[en.Path] = en.Type
	}
	if got["dir"] != "dir" || got["dir/sub"] != "dir" || got["dir/sub/a.txt"] != "file" {
		t.Fatalf("list = %+v", ls.Entries)
	}
	failure(t, exec(toolset.ToolEdit, toolset.EditInput{Path: "dir/sub/a.txt", Old: "absent", New: "x"}), envapi.CodeInvalidInput)
	failure(t, exec(toolset.ToolRead, toolset.ReadInput{Path: "../etc/passwd"}), envapi.CodePathEscape)
	failure(t, exec(toolset.ToolRead, toolset.ReadInput{Path: "/etc/passwd"}), envapi.CodePathEscape)
	failure(t, exec(toolset.ToolRead, toolset.ReadInput{Path: "dir"}), envapi.CodeInvalidInput)
	h.shell(c, "ln -s /etc escape && ln -s /tmp/x out")
	failure(t, exec(toolset.ToolRead, toolset.ReadInput{Path: "escape/hostname"}), envapi.CodePathEscape)
	failure(t, exec(toolset.ToolWrite, toolset.WriteInput{Path: "escape/new/file", Content: "x"}), envapi.CodePathEscape)
	failure(t, exec(toolset.ToolWrite, toolset.WriteInput{Path: "out", Content: "x"}), envapi.CodePathEscape)
	failure(t, exec("format_disk", struct{}{}), envapi.CodeUnsupported)
}

func TestCommandInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "envs")
	stdin := "piped"
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
		Argv: []string{"sh", "-c", `echo "$GREETING $(cat) $(pwd)"; head -c 100 /dev/zero | tr '\0' x >&2`},
		Cwd:  "sub/..", Env: map[string]string{"GREETING": "hi"}, Stdin: &stdin,
	}), nil))
	out := h.commandOutput(r)
	// The profile caps output at 64 bytes shared by both streams, whichever
	// the Engine relays first: stdout, within half of them, is whole, and
	// stderr keeps its end in what stdout leaves.
	const want = "hi piped /workspace\n"
	if out.Stdout != want || out.Stderr != strings.Repeat("x", 64-len(want)) || !out.Truncated {
		t.Fatalf("command = %+v, want %q and the end of 100 x on stderr, 64 bytes in all, truncated", out, want)
	}
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "env", Env: map[string]string{"PATH": "/x"}}), nil)), envapi.CodeInvalidInput)
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "pwd", Cwd: "../x"}), nil)), envapi.CodePathEscape)
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), json.RawMessage(`{"shell":"true","bogus":1}`), nil)), envapi.CodeInvalidInput)
	// Output is streamed as events before the finish.
	r = h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo one; echo two >&2"}), nil))
	seq := c.Last()
	h.commandOutput(r)
	var streamed strings.Builder
	var methods []string
	for _, call := range h.brain.CallsFor(c.Session, seq) {
		methods = append(methods, call.Method)
		if call.Method == "emit" {
			var in struct {
				EventType string `json:"event_type"`
				Data      chunk  `json:"data"`
			}
			if err := json.Unmarshal(call.Input, &in); err != nil || in.EventType != OutputEvent {
				t.Fatalf("emit %s: %v", call.Input, err)
			}
			streamed.WriteString(in.Data.Stream + ":" + in.Data.Data)
		}
	}
	if methods[len(methods)-1] != "finish" || !strings.Contains(streamed.String(), "stdout:one\n") || !strings.Contains(streamed.String(), "stderr:two\n") {
		t.Fatalf("callbacks %v streamed %q", methods, streamed.String())
	}
}

func TestDeadlineKillsProcessTree(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "true") // allocate
	start := time.Now()
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
		Shell: "(trap '' TERM; sleep 57; echo late > late) & sleep 60",
	}), envtest.Millis(1000)))
	failure(t, r, envapi.CodeTimeout)
	if len(r.Details) > 0 {
		t.Fatalf("timeout carries cleanup evidence: %s", r.Details)
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Fatalf("timeout answered after %s", d)
	}
	if ps := h.processes(c); strings.Contains(ps, "sleep 5") || strings.Contains(ps, "sleep 60") {
		t.Fatalf("processes survived the deadline:\n%s", ps)
	}
	if n := h.runningExecs(c); n != 0 {
		t.Fatalf("%d execs still running", n)
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 1 || vols != 1 {
		t.Fatalf("binding has %d containers, %d volumes; want exactly its own", ctrs, vols)
	}
	// The profile's command timeout_ms works the same way.
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "sleep 60", TimeoutMs: 300}), nil)), envapi.CodeTimeout)
}

func TestCancelKillsProcessTree(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "true")
	seq := c.Reserve()
	cmd := c.At(seq, envapi.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
		Shell: "(sleep 58; echo late > late) & echo started; sleep 60",
	}), nil, func() *envapi.Grant { g := h.brain.ToolGrant(c.Session, seq); return &g }()))
	done := make(chan envapi.Receipt, 1)
	go func() { done <- h.post(cmd) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.brain.WaitFor(ctx, func(call envtest.Call) bool {
		return call.Sequence == seq && call.Method == "emit" && strings.Contains(string(call.Input), "started")
	}); err != nil {
		t.Fatalf("the command never started: %v", err)
	}
	if r := h.post(c.Cancel(seq)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel = %+v", r)
	}
	failure(t, <-done, envapi.CodeCancelled)
	if ps := h.processes(c); strings.Contains(ps, "sleep 5") || strings.Contains(ps, "sleep 60") {
		t.Fatalf("processes survived the cancel:\n%s", ps)
	}
	if n := h.runningExecs(c); n != 0 {
		t.Fatalf("%d execs still running", n)
	}
}

func TestResourceLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "echo data > f")
	st, _, _ := h.p.store.get(bindingKey(c))
	ctx := context.Background()
	// A volume in use cannot be removed: out-of-band removal takes the
	// container first, then the volume.
	if err := removeContainer(ctx, h.p.cli, st.resourceName()); err != nil {
		t.Fatal(err)
	}
	if err := removeVolume(ctx, h.p.cli, st.resourceName()); err != nil {
		t.Fatal(err)
	}
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "cat f"}), nil)), envapi.CodeResourceLost)
	failure(t, h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "f"}), nil)), envapi.CodeResourceLost)
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
		t.Fatalf("lost resources were re-created: %d containers, %d volumes", ctrs, vols)
	}
	reports := h.brain.Filter(func(call envtest.Call) bool {
		return call.Kind == envtest.KindReporter && strings.Contains(string(call.Input), envapi.CodeResourceLost)
	})
	if len(reports) == 0 {
		t.Fatal("no resource_lost observation was reported")
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown after loss = %+v", r)
	}
}

func TestDetachKeepsWorkspaceTeardownRemovesAll(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "echo kept > f")
	if r := h.post(c.Detach()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("detach = %+v", r)
	}
	st, _, _ := h.p.store.get(bindingKey(c))
	info, err := h.p.cli.ContainerInspect(context.Background(), st.resourceName())
	if err != nil || info.State.Running {
		t.Fatalf("container after detach: running=%v, %v; want stopped", info.State != nil && info.State.Running, err)
	}
	if out := h.shell(c, "cat f"); out.Stdout != "kept\n" {
		t.Fatalf("after detach = %+v", out)
	}
	for range 2 {
		if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
			t.Fatalf("teardown = %+v", r)
		}
		if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
			t.Fatalf("after teardown: %d containers, %d volumes", ctrs, vols)
		}
	}
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil)), envapi.CodeUnavailable)
	failure(t, h.post(c.Detach()), envapi.CodeUnavailable)
}

// A FIFO or a link to one is refused at once by every file tool: none opens
// it, so none waits for a peer.
func TestFileToolsRefuseSpecialFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "mkfifo p && ln -s p link")
	deadline := int64(20_000)
	cases := []struct {
		name string
		in   any
	}{
		{toolset.ToolRead, toolset.ReadInput{Path: "p"}},
		{toolset.ToolRead, toolset.ReadInput{Path: "link"}},
		{toolset.ToolWrite, toolset.WriteInput{Path: "p", Content: "x"}},
		{toolset.ToolWrite, toolset.WriteInput{Path: "link", Content: "x", Append: true}},
		{toolset.ToolEdit, toolset.EditInput{Path: "p", Old: "a", New: "b"}},
		{toolset.ToolList, toolset.ListInput{Path: "p"}},
	}
	for _, tc := range cases {
		start := time.Now()
		failure(t, h.post(c.Execute(tool(tc.name), mustJSON(tc.in), &deadline)), envapi.CodeInvalidInput)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s %+v refused after %v", tc.name, tc.in, d)
		}
	}
}
