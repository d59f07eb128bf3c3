package pythonuv

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// floodOutput is the input making flood write a JSON string of n+2 bytes.
func floodOutput(n int) json.RawMessage {
	raw, _ := json.Marshal(map[string]int{"n": n})
	return raw
}

// TestCommandBoundsAnswersByMaxAnswerBytes checks that --max-answer-bytes
// bounds the answers as Brain's BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES
// would: a result that makes a larger answer fails with output_limit, one
// within the bound is answered.
func TestCommandBoundsAnswersByMaxAnswerBytes(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, exit, _ := startCommand(t, ctx, "--listen", "127.0.0.1:0", "--no-auth", "--uv", uv,
		"--project", "flood="+filepath.Join(root, "plain")+":flood",
		"--max-answer-bytes", "4096")
	defer func() {
		cancel()
		select {
		case <-exit:
		case <-time.After(45 * time.Second):
			t.Error("Command did not stop")
		}
	}()

	brain := envtest.NewBrain(t)
	s := envtest.NewCommands("answers", "python")
	s.Brain = brain
	pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer pcancel()
	post := func(cmd envapi.Command) (envapi.Receipt, int) {
		t.Helper()
		status, body, resp, err := envtest.Post(pctx, nil, url, "", cmd)
		if err != nil || resp == nil {
			t.Fatalf("post: %d %v %s", status, err, body)
		}
		return resp.Receipt, len(body)
	}
	if rc, _ := post(s.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %s", describe(rc))
	}
	if rc, _ := post(s.Execute(impl("flood"), floodOutput(1000), nil)); rc.Type != envapi.ReceiptResult || len(rc.Output) != 1002 {
		t.Fatalf("execute within the bound: %s", describe(rc))
	}
	rc, n := post(s.Execute(impl("flood"), floodOutput(10_000), nil))
	wantFailure(t, rc, envapi.CodeOutputLimit)
	if n > 4096 {
		t.Fatalf("answer of %d bytes, beyond the bound of 4096", n)
	}
}

// TestHandlerBoundsAnswersByMaxAnswerBytes checks the programmatic form:
// Handler bounds its answers as WithMaxAnswerBytes says.
func TestHandlerBoundsAnswersByMaxAnswerBytes(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	brain, s, post := boundedBinding(t, fixtureConfig(uv, root), 4096)
	// An oversized result is answered as the failure and never finished:
	// Brain records the failure as the Tool's outcome.
	big := s.Execute(impl("flood"), floodOutput(10_000), nil)
	wantFailure(t, post(big), envapi.CodeOutputLimit)
	if n := brain.Count(envtest.Execution(s.Session, big.Operation.Sequence, envapi.MethodFinish)); n != 0 {
		t.Fatalf("the oversized result was finished %d times", n)
	}
	small := s.Execute(impl("flood"), floodOutput(1000), nil)
	if rc := post(small); rc.Type != envapi.ReceiptResult || len(rc.Output) != 1002 {
		t.Fatalf("execute within the bound: %s", describe(rc))
	}
	if n := brain.Count(envtest.Execution(s.Session, small.Operation.Sequence, envapi.MethodFinish)); n != 1 {
		t.Fatalf("the result within the bound was finished %d times", n)
	}
}

// TestMaxAnswerBytesRefusesNegative checks that a negative bound is
// refused rather than silently replaced by the default.
func TestMaxAnswerBytesRefusesNegative(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	if _, err := New(fixtureConfig(uv, root), WithMaxAnswerBytes(-1)); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("New with a negative bound: %v", err)
	}
	var out, errb bytes.Buffer
	args := []string{"--no-auth", "--uv", uv, "--project", "p=" + filepath.Join(root, "plain") + ":echo", "--max-answer-bytes", "-1"}
	if got := Command(context.Background(), args, &out, &errb); got != 2 {
		t.Fatalf("Command(%q) = %d, want 2; stderr: %s", args, got, errb.String())
	}
}

// TestAnswerBoundTooSmallIsRefused: a bound too small to hold a failure's
// answer (not even the output_limit that replaces an answer too large)
// would have Brain refuse every failure, so that a caller never learns
// why an execute failed: New and Command refuse it at start.
func TestAnswerBoundTooSmallIsRefused(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	if _, err := New(fixtureConfig(uv, root), WithMaxAnswerBytes(100)); err == nil || !strings.Contains(err.Error(), "at least 1024") {
		t.Fatalf("New with a bound of 100 bytes: %v", err)
	}
	p, err := New(fixtureConfig(uv, root), WithMaxAnswerBytes(MinAnswerBytes))
	if err != nil {
		t.Fatalf("New with a bound of MinAnswerBytes: %v", err)
	}
	_ = p.Close()
	var out, errb bytes.Buffer
	args := []string{"--no-auth", "--uv", uv, "--project", "p=" + filepath.Join(root, "plain") + ":echo", "--max-answer-bytes", "100"}
	if got := Command(context.Background(), args, &out, &errb); got != 2 || !strings.Contains(errb.String(), "at least 1024") {
		t.Fatalf("Command(%q) = %d, want 2 naming the least bound; stderr: %s", args, got, errb.String())
	}
}

// TestFailureEvidenceFitsTheAnswerBound: with an answer bound smaller
// than the stderr kept, a failure is still answered with its own code and
// the end of its stderr (stderr_truncated), the start of an output that
// is not JSON, and the evidence of a failed preparation, each cut to fit,
// rather than replaced by an output_limit that says nothing of why.
func TestFailureEvidenceFitsTheAnswerBound(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	// A project whose setup fails with a long stderr.
	loud := filepath.Join(root, "loud")
	if err := os.Mkdir(loud, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, loud, map[string]string{
		"pyproject.toml": readFile(t, filepath.Join(root, "plain", "pyproject.toml")),
		"uv.lock":        readFile(t, filepath.Join(root, "plain", "uv.lock")),
		"loud_setup.py":  "import sys\nsys.stderr.write('x' * 20000 + ' setup gave up\\n')\nsys.exit(4)\n",
	})
	cfg := fixtureConfig(uv, root)
	cfg.Projects["noisy"] = Project{Directory: filepath.Join(root, "plain"), Module: "noisy"}
	cfg.Projects["loud"] = Project{Directory: loud, Setup: "loud_setup", Module: "tool"}
	const bound = 4096
	_, s, post := boundedBinding(t, cfg, bound)
	wantTail := func(d map[string]any, end string) {
		t.Helper()
		tail, _ := d["stderr"].(string)
		if len(tail) < 512 || !strings.HasSuffix(tail, end) || d["stderr_truncated"] != true {
			t.Fatalf("details %v: want a truncated stderr tail of some length ending in %q", d, end)
		}
	}

	// A module failing with 16 KiB of stderr (the default kept).
	input, _ := json.Marshal(map[string]any{"stderr": strings.Repeat("e", 20000) + " the last words\n"})
	wantTail(wantFailure(t, post(s.Execute(impl("noisy"), input, envtest.Millis(120_000))), envapi.CodeExecutionFailed), " the last words\n")

	// A module writing control characters (six bytes each in JSON) that
	// are not JSON, and a long stderr.
	input, _ = json.Marshal(map[string]any{"stdout": strings.Repeat("\x01", 2000), "stderr": strings.Repeat("e", 20000) + " why\n", "exit": 0})
	d := wantFailure(t, post(s.Execute(impl("noisy"), input, envtest.Millis(120_000))), envapi.CodeInvalidOutput)
	wantTail(d, " why\n")
	if so, _ := d["stdout"].(string); len(so) < 64 || strings.Trim(so, "\x01") != "" {
		t.Fatalf("details %v: want the start of the output", d)
	}

	// A setup failing with a long stderr: every execute is answered the
	// preparation's failure.
	for range 2 {
		d := wantFailure(t, post(s.Execute(impl("loud"), json.RawMessage(`{}`), envtest.Millis(120_000))), envapi.CodePreparationFailed)
		wantTail(d, " setup gave up\n")
		if d["phase"] != PhaseSetup {
			t.Fatalf("details %v: want the setup phase", d)
		}
	}
}

// boundedBinding serves a provider of cfg whose answers are bounded to
// bound bytes, and sets up one binding on it: it answers Brain (the
// callbacks' receiver), the binding's commands and post, which sends a
// command and fails the test when its answer is not one or exceeds the
// bound.
func boundedBinding(t *testing.T, cfg Config, bound int64) (*envtest.Brain, *envtest.Commands, func(envapi.Command) envapi.Receipt) {
	t.Helper()
	p, err := New(cfg, WithMaxAnswerBytes(bound))
	if err != nil {
		t.Fatal(err)
	}
	brain := envtest.NewBrain(t)
	srv := httptest.NewServer(p.Handler(""))
	t.Cleanup(func() {
		srv.Close()
		_ = p.Close()
	})
	s := envtest.NewCommands("answers", "python")
	s.Brain = brain
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	post := func(cmd envapi.Command) envapi.Receipt {
		t.Helper()
		status, body, resp, err := envtest.Post(ctx, nil, srv.URL, "", cmd)
		if err != nil || resp == nil {
			t.Fatalf("post: %d %v %s", status, err, body)
		}
		if int64(len(body)) > bound {
			t.Fatalf("answer of %d bytes, beyond the bound of %d", len(body), bound)
		}
		return resp.Receipt
	}
	if rc := post(s.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %s", describe(rc))
	}
	return brain, s, post
}
