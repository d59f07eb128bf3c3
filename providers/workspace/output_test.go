package workspace

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

func TestOutputCap(t *testing.T) {
	f := newFixture(t, Options{OutputLimit: 4096})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"output_limit": 100}`))))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh(`i=0; while [ $i -lt 1000 ]; do printf 'line %04d\n' $i; i=$((i+1)); done; echo err >&2; exit 7`), nil), &out)
	if out.ExitCode != 7 || !out.Truncated || len(out.Stdout) != 100 || out.Stderr != "err\n" {
		t.Fatalf("output %+v", out)
	}
	if !strings.HasPrefix(out.Stdout, "line 0000\nline 0001\n") {
		t.Errorf("head not kept: %q", out.Stdout[:30])
	}
	ok(t, f.exec(c, "command", map[string]any{"argv": []string{"printf", "short"}}, nil), &out)
	if out.Truncated || out.Stdout != "short" {
		t.Errorf("short output %+v", out)
	}
	// Reads are capped by the same limit.
	ok(t, f.exec(c, "write", map[string]string{"path": "big", "content": strings.Repeat("z", 1000)}, nil), nil)
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]string{"path": "big"}, nil), &rd)
	if len(rd.Content) != 100 || !rd.Truncated || rd.Size != 1000 {
		t.Errorf("read %d bytes, truncated %v, size %d", len(rd.Content), rd.Truncated, rd.Size)
	}
}

func TestStreamingEmitsBeforeFinish(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	// 40 KiB of stdout in several writes, multi-byte characters included,
	// and some stderr.
	script := `i=0; while [ $i -lt 1000 ]; do printf 'é%038d\n' $i; i=$((i+1)); done; echo oops >&2`
	cmd := c.Execute(tool("command"), mustJSON(t, sh(script)), nil)
	seq := cmd.Operation.Sequence
	var out toolset.CommandOutput
	ok(t, f.post(cmd), &out)

	calls := f.brain.CallsFor("s1", seq)
	var streamed = map[string]*strings.Builder{"stdout": {}, "stderr": {}}
	finishAt := -1
	for i, cl := range calls {
		switch cl.Method {
		case envapi.MethodEmit:
			if finishAt >= 0 {
				t.Errorf("emit after finish")
			}
			var in struct {
				EventType string `json:"event_type"`
				Data      outputEvent
			}
			if err := json.Unmarshal(cl.Input, &in); err != nil || in.EventType != OutputEvent {
				t.Fatalf("emit %s: %v", cl.Input, err)
			}
			if len(in.Data.Data) > maxEventBytes || !utf8.ValidString(in.Data.Data) || in.Data.Skipped != 0 {
				t.Errorf("event of %d bytes, valid %v, skipped %d", len(in.Data.Data), utf8.ValidString(in.Data.Data), in.Data.Skipped)
			}
			streamed[in.Data.Stream].WriteString(in.Data.Data)
		case envapi.MethodFinish:
			finishAt = i
		}
	}
	if finishAt < 0 {
		t.Fatal("no finish")
	}
	if streamed["stdout"].String() != out.Stdout || len(out.Stdout) != 1000*41 {
		t.Errorf("streamed %d stdout bytes, result has %d", streamed["stdout"].Len(), len(out.Stdout))
	}
	if streamed["stderr"].String() != "oops\n" {
		t.Errorf("streamed stderr %q", streamed["stderr"].String())
	}
	if n := f.brain.Count(envtest.Execution("s1", seq, envapi.MethodEmit)); n < 3 {
		t.Errorf("%d emits; want the output in several chunks", n)
	}
}

func TestStreamingStopsOnEmitFailure(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	f.brain.Inject(envapi.MethodEmit, envtest.Fault{Kind: envtest.ServerError})
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("echo a; echo b"), nil), &out)
	if out.Stdout != "a\nb\n" {
		t.Errorf("output %+v", out)
	}
	// Without an emit grant nothing is streamed and the command still runs.
	cmd := c.ExecuteWith(tool("command"), mustJSON(t, sh("echo quiet")), nil, func(seq uint64) *envapi.Grant {
		g := f.brain.ExecutionGrant("s1", seq, envapi.MethodFinish)
		return &g
	})
	ok(t, f.post(cmd), &out)
	if out.Stdout != "quiet\n" {
		t.Errorf("output %+v", out)
	}
}

func TestCoalesceKeepsRunesWhole(t *testing.T) {
	carry := map[string][]byte{}
	e := []byte("é") // 2 bytes
	evs := coalesce([]chunk{{"stdout", []byte("ab")}, {"stdout", e[:1]}}, carry, false)
	if len(evs) != 1 || evs[0].Data != "ab" || string(carry["stdout"]) != string(e[:1]) {
		t.Fatalf("first batch %+v carry %q", evs, carry["stdout"])
	}
	evs = coalesce([]chunk{{"stdout", e[1:]}, {"stderr", []byte("x")}}, carry, true)
	if len(evs) != 2 || evs[0].Data != "é" || evs[1].Stream != "stderr" {
		t.Fatalf("second batch %+v", evs)
	}
	big := []byte(strings.Repeat("é", maxEventBytes))
	evs = coalesce([]chunk{{"stdout", big}}, map[string][]byte{}, true)
	total := 0
	for _, ev := range evs {
		if !utf8.ValidString(ev.Data) || len(ev.Data) > maxEventBytes {
			t.Fatalf("event of %d bytes valid %v", len(ev.Data), utf8.ValidString(ev.Data))
		}
		total += len(ev.Data)
	}
	if total != len(big) {
		t.Errorf("total %d, want %d", total, len(big))
	}
}

// Output the emitter could not keep up with is counted as skipped on the
// stream it belongs to, also when none of that stream's bytes were
// pending: every byte of each stream is either streamed or counted.
func TestStreamingCountsEverySkippedByte(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	// The first emission is held long enough for the command to fill what
	// may wait and to write its stderr after that.
	f.brain.Inject(envapi.MethodEmit, envtest.Fault{Kind: envtest.SlowReply, Delay: 2 * time.Second, Times: 1})
	cmd := c.Execute(tool("command"), mustJSON(t, sh(`head -c 614400 /dev/zero | tr '\0' a; printf oops >&2`)), nil)
	seq := cmd.Operation.Sequence
	var out toolset.CommandOutput
	ok(t, f.post(cmd), &out)
	if out.Truncated || len(out.Stdout) != 614400 || out.Stderr != "oops" {
		t.Fatalf("output: %d bytes of stdout, stderr %q, truncated %v", len(out.Stdout), out.Stderr, out.Truncated)
	}
	got := map[string]int{}
	skipped := 0
	for _, cl := range f.brain.CallsFor("s1", seq) {
		if cl.Method != envapi.MethodEmit {
			continue
		}
		var in struct {
			Data outputEvent `json:"data"`
		}
		if err := json.Unmarshal(cl.Input, &in); err != nil {
			t.Fatal(err)
		}
		got[in.Data.Stream] += len(in.Data.Data) + in.Data.Skipped
		skipped += in.Data.Skipped
	}
	if skipped == 0 {
		t.Fatal("nothing was skipped; the test shows nothing")
	}
	if got["stdout"] != len(out.Stdout) || got["stderr"] != len(out.Stderr) {
		t.Errorf("streamed or skipped: %d bytes of stdout, %d of stderr; want %d and %d", got["stdout"], got["stderr"], len(out.Stdout), len(out.Stderr))
	}
}
