package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// sized posts cmd and answers the receipt and the bytes of the whole
// answer, as Brain measures it against its bound.
func (h *harness) sized(cmd envapi.Command) (envapi.Receipt, int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	status, body, resp, err := envtest.Post(ctx, nil, h.url, testToken, cmd)
	if err != nil || status != 200 || resp == nil {
		h.t.Fatalf("POST %s: status %d, %v: %.200s", cmd.Operation.Request.Type, status, err, body)
	}
	return resp.Receipt, len(body)
}

// An operator who lowers the answer Brain takes (MaxAnswerBytes) gets
// reads, command outputs and lists cut to fit it, with truncated set,
// though the profile's output_bytes lets more through: content JSON writes
// six bytes for ('<' is "\u003c") never makes an answer larger than the
// bound, and a read continued from where the cut one ended reads on.
func TestLoweredAnswerBoundIsFollowed(t *testing.T) {
	_, image := testEngine(t)
	const bound = 64 << 10
	h := newHarnessConfig(t, Config{Profiles: Profiles{"default": {Image: image}}, MaxAnswerBytes: bound})
	c := h.commands()
	h.setup(c, "")
	defer h.post(c.Teardown())
	if out := h.shell(c, "head -c 256000 /dev/zero | tr '\\0' '<' > page; mkdir d; i=0; while [ $i -lt 2000 ]; do : > d/'<<<<<'$i; i=$((i+1)); done"); out.ExitCode != 0 {
		t.Fatalf("prepare: %+v", out)
	}

	offset := 0
	for i := range 2 {
		r, n := h.sized(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "page", Offset: int64(offset)}), nil))
		var rd toolset.ReadOutput
		decode(t, r, &rd)
		if n > bound || !rd.Truncated || rd.Size != 256000 || len(rd.Content) < 8<<10 || strings.Trim(rd.Content, "<") != "" {
			t.Fatalf("read %d at %d: %d bytes (bound %d), %d bytes of content, truncated %v", i, offset, n, bound, len(rd.Content), rd.Truncated)
		}
		offset += len(rd.Content)
	}

	r, n := h.sized(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "cat page; exit 3"}), nil))
	out := h.commandOutput(r)
	if n > bound || !out.Truncated || out.ExitCode != 3 || len(out.Stdout) < 8<<10 || strings.Trim(out.Stdout, "<") != "" {
		t.Errorf("command: %d bytes (bound %d), %d bytes of stdout, truncated %v, exit %d", n, bound, len(out.Stdout), out.Truncated, out.ExitCode)
	}

	r, n = h.sized(c.Execute(tool(toolset.ToolList), mustJSON(toolset.ListInput{Path: "d"}), nil))
	var list toolset.ListOutput
	decode(t, r, &list)
	if n > bound || !list.Truncated || len(list.Entries) < 500 || len(list.Entries) >= 2000 {
		t.Errorf("list: %d bytes (bound %d), %d entries, truncated %v", n, bound, len(list.Entries), list.Truncated)
	}
}

// decode fails the test unless r is a result, and decodes its output.
func decode(t *testing.T, r envapi.Receipt, v any) {
	t.Helper()
	if r.Type != envapi.ReceiptResult {
		t.Fatalf("receipt %s %s: %s, want a result", r.Type, r.Code, r.Message)
	}
	if err := json.Unmarshal(r.Output, v); err != nil {
		t.Fatalf("output %.200s: %v", r.Output, err)
	}
}

// A --max-answer-bytes below MinAnswerBytes, at which no answer (not
// even the failure output_limit) fits, is refused by name, before the
// Engine is asked anything, as New refuses such a Config.MaxAnswerBytes.
func TestCommandRefusesMaxAnswerBytes(t *testing.T) {
	// Ended already: a Command that took the bound stops at once rather
	// than serving.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, v := range []string{"0", "-5", "1", "1023"} {
		var out, errb bytes.Buffer
		args := []string{"--listen", "127.0.0.1:0", "--state", t.TempDir(), "--image", "absent:1", "--no-auth", "--max-answer-bytes", v}
		if got := Command(ctx, args, &out, &errb); got != 2 || !strings.Contains(errb.String(), "--max-answer-bytes") || !strings.Contains(errb.String(), "1024") {
			t.Errorf("--max-answer-bytes %s: exit %d, %q; want exit 2 naming the flag and 1024", v, got, errb.String())
		}
	}
	for _, n := range []int64{-1, 1, MinAnswerBytes - 1} {
		if p, err := New(Config{Profiles: Profiles{"default": {Image: "absent:1"}}, StateDir: t.TempDir(), MaxAnswerBytes: n}); err == nil {
			_ = p.Close()
			t.Errorf("New with MaxAnswerBytes %d succeeded", n)
		}
	}
	p, err := New(Config{Profiles: Profiles{"default": {Image: "absent:1"}}, StateDir: t.TempDir(), MaxAnswerBytes: MinAnswerBytes})
	if err != nil {
		t.Fatalf("New with MaxAnswerBytes MinAnswerBytes: %v", err)
	}
	_ = p.Close()
}

// A failing command's stderr ends with what went wrong: cut to a small
// answer bound, the end of its stderr is kept (and the start of its
// stdout), not the start of a long trace.
func TestLoweredAnswerBoundKeepsTheEndOfStderr(t *testing.T) {
	_, image := testEngine(t)
	const bound = 4 << 10
	h := newHarnessConfig(t, Config{Profiles: Profiles{"default": {Image: image}}, MaxAnswerBytes: bound})
	c := h.commands()
	h.setup(c, "")
	defer h.post(c.Teardown())
	const script = `echo started; i=0; while [ $i -lt 500 ]; do echo "  at frame <$i>" >&2; echo "step $i"; i=$((i+1)); done; echo 'Error: the disk é is full' >&2; exit 7`
	r, n := h.sized(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: script}), nil))
	out := h.commandOutput(r)
	if n > bound || !out.Truncated || out.ExitCode != 7 {
		t.Fatalf("command: %d bytes (bound %d), truncated %v, exit %d", n, bound, out.Truncated, out.ExitCode)
	}
	if !strings.HasSuffix(out.Stderr, "  at frame <499>\nError: the disk é is full\n") || strings.Contains(out.Stderr, "<0>") {
		t.Errorf("stderr is not the end of the command's: %q", out.Stderr)
	}
	if !strings.HasPrefix(out.Stdout, "started\nstep 0\n") {
		t.Errorf("stdout is not the start of the command's: %q", out.Stdout)
	}
}
