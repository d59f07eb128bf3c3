package session

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

const crashToken = "CRASHTOKEN "

// countingModel reports every request on stdout before answering.
type countingModel struct {
	n     *atomic.Int64
	print bool
}

func (c countingModel) Call(ctx context.Context, req model.Request, d func(model.Delta)) (model.Result, error) {
	c.n.Add(1)
	if c.print {
		fmt.Fprintln(os.Stdout, crashToken+"model")
	}
	return model.Scripted{}.Call(ctx, req, d)
}

func countingModels(n *atomic.Int64, print bool) model.Providers {
	return model.Providers{"scripted": func(model.Spec) (model.Client, error) { return countingModel{n: n, print: print}, nil }}
}

// TestCrashChild is the child process of the crash tests; it does nothing
// unless re-executed by one of them. It drives a session into the middle
// of an effect and blocks until it is killed.
func TestCrashChild(t *testing.T) {
	dir, mode, id := os.Getenv("BRAIN_CRASH_DIR"), os.Getenv("BRAIN_CRASH_MODE"), os.Getenv("BRAIN_CRASH_ID")
	if dir == "" {
		t.Skip("crash child only")
	}
	if mode == "replace" {
		crashReplaceChild(t, dir, id)
	}
	var n atomic.Int64
	h := openHarness(t, dir, Config{Models: countingModels(&n, true)}, map[string]string{"box": "hang"})
	h.envs.onOp = func(op Operation) { fmt.Fprintln(os.Stdout, crashToken+string(op.Request.Type)) }
	ctx := context.Background()
	req := toolSession("hang")
	req.Model = api.ModelConfig{Provider: "scripted", Name: "m"}
	switch mode {
	case "model", "tool":
		if _, err := h.engine.Create(ctx, id, req); err != nil {
			t.Fatal(err)
		}
		msg := script(map[string]any{"delay_ms": 600000})
		if mode == "tool" {
			msg = script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})
		}
		if _, err := h.engine.Submit(ctx, id, api.UserInput{Message: msg}); err != nil {
			t.Fatal(err)
		}
	case "release":
		h.envs.behaviour["box"] = "releasehang"
		if _, err := h.engine.Create(ctx, id, req); err != nil {
			t.Fatal(err)
		}
		if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
			t.Fatal(err)
		}
	case "background":
		// A turn ends with its tool returned but not finished.
		h.envs.behaviour["box"] = "returner"
		if _, err := h.engine.Create(ctx, id, req); err != nil {
			t.Fatal(err)
		}
		msg := script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})
		if _, err := h.engine.Send(ctx, id, api.UserInput{Message: msg}); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(os.Stdout, crashToken+"answered")
	case "create":
		h.envs.behaviour["box"] = "hangops"
		_, _ = h.engine.Create(ctx, id, req)
	case "end":
		if _, err := h.engine.Create(ctx, id, req); err != nil {
			t.Fatal(err)
		}
		h.envs.mu.Lock()
		h.envs.behaviour["box"] = "hangops"
		h.envs.mu.Unlock()
		_, _ = h.engine.End(ctx, id)
	}
	select {}
}

// crash runs the child in mode until it printed want, kills it with
// SIGKILL, and answers how many times each token was printed in total.
func crash(t *testing.T, dir, mode, id, want string) map[string]int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BRAIN_CRASH_DIR="+dir, "BRAIN_CRASH_MODE="+mode, "BRAIN_CRASH_ID="+id)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	lines := bufio.NewScanner(out)
	killed := false
	timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	for lines.Scan() {
		line := lines.Text()
		tok, ok := strings.CutPrefix(line, crashToken)
		if !ok {
			continue
		}
		counts[tok]++
		if tok == want && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("child never reached %q (tokens %v)", want, counts)
	}
	return counts
}

func TestCrashDuringModelCall(t *testing.T) {
	dir, id := t.TempDir(), NewSessionID()
	counts := crash(t, dir, "model", id, "model")
	if counts["model"] != 1 {
		t.Fatalf("model saw %d requests before the crash", counts["model"])
	}
	var n atomic.Int64
	h := openHarness(t, dir, Config{Models: countingModels(&n, false)}, map[string]string{"box": "echo"})
	sum, err := h.engine.Summary(context.Background(), id)
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("summary %+v %v", sum, err)
	}
	recs := h.records(id)
	k := kinds(recs)
	tail := strings.Join(k[len(k)-3:], ",")
	if tail != "model_call_failed,activation_failed,turn_failed" {
		t.Fatalf("records = %v", k)
	}
	f := decode[api.Failure](t, recs[len(recs)-3].Data)
	if f.Code != api.FailureInterrupted || !f.Ambiguous || f.Sequence != ofKind(recs, api.KindModelCallStarted)[0].Sequence {
		t.Fatalf("model_call_failed = %+v", f)
	}
	if tf := decode[api.Failure](t, recs[len(recs)-1].Data); tf.Code != api.FailureInterrupted || tf.Sequence != ofKind(recs, api.KindTurnStarted)[0].Sequence {
		t.Fatalf("turn_failed = %+v", tf)
	}
	// Recovery is recorded once; nothing was resent; the session works.
	if again := h.records(id); len(again) != len(recs) || n.Load() != 0 {
		t.Fatalf("recovery not idempotent or model resent (%d)", n.Load())
	}
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "after"}); err != nil {
		t.Fatal(err)
	}
}

func TestCrashDuringToolCall(t *testing.T) {
	dir, id := t.TempDir(), NewSessionID()
	counts := crash(t, dir, "tool", id, "execute")
	if counts["execute"] != 1 || counts["model"] != 1 {
		t.Fatalf("tokens before crash = %v", counts)
	}
	h := openHarness(t, dir, Config{}, map[string]string{"box": "echo"})
	sum, err := h.engine.Summary(context.Background(), id)
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("summary %+v %v", sum, err)
	}
	recs := h.records(id)
	k := kinds(recs)
	if tail := strings.Join(k[len(k)-3:], ","); tail != "tool_call_failed,activation_failed,turn_failed" {
		t.Fatalf("records = %v", k)
	}
	f := decode[api.Failure](t, recs[len(recs)-3].Data)
	if f.Code != api.FailureInterrupted || !f.Ambiguous || f.Sequence != ofKind(recs, api.KindToolCallStarted)[0].Sequence {
		t.Fatalf("tool_call_failed = %+v", f)
	}
	if len(h.envs.ops) != 0 {
		t.Fatalf("operations resent after restart: %+v", h.envs.ops)
	}
	// The restart interrupted the turn: an observation reported to the
	// passivated session starts no activation; the next message does.
	seq, err := h.engine.Report(context.Background(), id, api.EnvironmentRef{Name: "box", Sequence: 1}, Report{Type: ReportResult,
		Output: json.RawMessage(`{"content":"after the restart"}`)})
	if err != nil {
		t.Fatal(err)
	}
	h.noActivationAfter(id, seq-1, "after recovery")
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "after"}); err != nil {
		t.Fatal(err)
	}
}

// A restart during a turn-end release interrupts no turn: the release is
// closed as an ambiguous failure, and an observation reported after the
// restart wakes the loop as before it.
func TestCrashDuringRelease(t *testing.T) {
	dir, id := t.TempDir(), NewSessionID()
	crash(t, dir, "release", id, "call")
	h := openHarness(t, dir, Config{}, map[string]string{"box": "echo"})
	sum, err := h.engine.Summary(context.Background(), id)
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("summary %+v %v", sum, err)
	}
	recs := h.records(id)
	k := kinds(recs)
	if k[len(k)-1] != api.KindEnvironmentCallFailed || strings.Contains(strings.Join(k, ","), kindSessionInterrupted) {
		t.Fatalf("records = %v, want the release closed and no interruption", k)
	}
	if f := decode[api.Failure](t, recs[len(recs)-1].Data); f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Fatalf("environment_call_failed = %+v", f)
	}
	seq, err := h.engine.Report(context.Background(), id, api.EnvironmentRef{Name: "box", Sequence: 1}, Report{Type: ReportResult,
		Output: json.RawMessage(`{"content":"after the restart"}`)})
	if err != nil {
		t.Fatal(err)
	}
	h.waitEvent(id, seq, api.KindActivationStarted)
}

func TestCrashDuringCreateAndEnd(t *testing.T) {
	dir, id := t.TempDir(), NewSessionID()
	crash(t, dir, "create", id, "setup")
	dir2, id2 := t.TempDir(), NewSessionID()
	crash(t, dir2, "end", id2, "detach")

	h := openHarness(t, dir, Config{}, map[string]string{"box": "echo"})
	sum, err := h.engine.Summary(context.Background(), id)
	if err != nil || sum.Status != api.StatusFailed {
		t.Fatalf("summary %+v %v", sum, err)
	}
	k := kinds(h.records(id))
	if strings.Join(k[len(k)-2:], ",") != "environment_setup_failed,session_creation_failed" {
		t.Fatalf("records = %v", k)
	}
	h2 := openHarness(t, dir2, Config{}, map[string]string{"box": "echo"})
	sum, err = h2.engine.Summary(context.Background(), id2)
	if err != nil || sum.Status != api.StatusEnded {
		t.Fatalf("summary %+v %v", sum, err)
	}
	k = kinds(h2.records(id2))
	if strings.Join(k[len(k)-3:], ",") != "environment_detach_failed,session_end_failed,session_ended" {
		t.Fatalf("records = %v", k)
	}
}

// A restart while a tool the last turn left running is open closes it as
// an ambiguous interrupted failure, sends it nowhere again and starts no
// activation; the next message's activation is handed that failure.
func TestCrashDuringBackgroundTool(t *testing.T) {
	dir, id := t.TempDir(), NewSessionID()
	counts := crash(t, dir, "background", id, "answered")
	if counts["execute"] != 1 {
		t.Fatalf("tokens before crash = %v", counts)
	}
	h := openHarness(t, dir, Config{}, map[string]string{"box": "echo"})
	ctx := context.Background()
	sum, err := h.engine.Summary(ctx, id)
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("summary %+v %v", sum, err)
	}
	recs := h.records(id)
	k := kinds(recs)
	if strings.Join(k[len(k)-3:], ",") != "turn_ended,"+kindSessionInterrupted+",tool_call_failed" {
		t.Fatalf("records = %v", k)
	}
	toolSeq := ofKind(recs, api.KindToolCallStarted)[0].Sequence
	failed := recs[len(recs)-1]
	if f := decode[api.Failure](t, failed.Data); f.Code != api.FailureInterrupted || !f.Ambiguous || f.Sequence != toolSeq {
		t.Fatalf("tool_call_failed = %+v", f)
	}
	h.noActivationAfter(id, failed.Sequence, "after recovery")
	if len(h.envs.ops) != 0 {
		t.Fatalf("operations sent after restart: %+v", h.envs.ops)
	}
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "after"}); err != nil {
		t.Fatal(err)
	}
	recs = h.records(id)
	as := decode[activationStarted](t, ofKind(recs, api.KindActivationStarted)[1].Data)
	if len(as.Events) != 1 || as.Events[0] != failed.Sequence {
		t.Fatalf("activation_started = %+v, want the tool's failure handed over", as)
	}
	if n := len(h.envs.opsOf(envapi.RequestExecute)); n != 0 {
		t.Fatalf("%d executes after the restart", n)
	}
}
