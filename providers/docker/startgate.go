package docker

import (
	"bytes"
	"io"
	"math"

	"github.com/brain-in-go/brain/providers/internal/fit"
)

// startMark is what the wrapper writes on stdout before it starts the
// command. When the Engine fails to start an exec (its container stopped
// after the exec was created) it may still open the exec's stream, write
// its error there as stdout and give the exec exit code 126: without the
// mark that would pass for the command's own output and status.
const startMark = "\x1fbrain-exec\x1f"

// startMarkShell writes startMark in the wrapper.
const startMarkShell = `printf '\037brain-exec\037'`

// maxRefusal bounds what is kept of the Engine's words on a stream that
// never carried the mark.
const maxRefusal = 4 << 10

// startGate sits between an exec's demultiplexed stream and the command's
// writers. Until stdout has carried startMark nothing is passed on: what
// stdout carries instead is the Engine's, and stderr is held (its pipe is
// copied apart from stdout's, so the command's first stderr may come ahead
// of the mark). Once the mark is seen the held stderr is passed on, and
// everything after. The writers keep the end of stderr within a budget of
// bytes, so the end of stderr is held, up to one byte past the budget:
// what came before is dropped, as the writers would drop it, and the byte
// past the budget still tells them the output was cut. Its writers are
// used by one goroutine (stdcopy).
type startGate struct {
	stdout, stderr io.Writer
	hold           int64
	head           []byte    // stdout before the mark was whole
	held           *fit.Tail // the end of stderr before the mark, at most hold bytes
	started        bool
	refused        bool // stdout began with something else than the mark
}

// newStartGate returns the gate of writers sharing a budget of budget
// bytes.
func newStartGate(stdout, stderr io.Writer, budget int64) *startGate {
	hold := max(budget, 0)
	if hold < math.MaxInt64 {
		hold++
	}
	return &startGate{stdout: stdout, stderr: stderr, hold: hold, held: fit.NewTail(hold)}
}

// Started reports whether the wrapper announced that it runs the command.
func (g *startGate) Started() bool { return g.started }

// Refusal is what the stream carried instead of the mark: the Engine's
// words when it did not start the command.
func (g *startGate) Refusal() string {
	return string(bytes.TrimSpace(append(append([]byte(nil), g.head...), g.heldTail()...)))
}

// heldTail is the end of the stderr held, at most hold bytes, as it was
// written (the writers it is passed on to cut it between characters).
func (g *startGate) heldTail() []byte {
	return g.held.Bytes()
}

func (g *startGate) Stdout() io.Writer { return gateWriter{g, false} }
func (g *startGate) Stderr() io.Writer { return gateWriter{g, true} }

type gateWriter struct {
	g      *startGate
	stderr bool
}

func (w gateWriter) Write(p []byte) (int, error) {
	g := w.g
	switch {
	case g.started && w.stderr:
		return g.stderr.Write(p)
	case g.started:
		return g.stdout.Write(p)
	case w.stderr:
		return g.held.Write(p)
	case g.refused:
		if room := maxRefusal - len(g.head); room > 0 {
			g.head = append(g.head, p[:min(len(p), room)]...)
		}
		return len(p), nil
	}
	n := min(len(p), len(startMark)-len(g.head))
	g.head = append(g.head, p[:n]...)
	if !bytes.HasPrefix([]byte(startMark), g.head) {
		g.refused = true
		_, _ = w.Write(p[n:])
		return len(p), nil
	}
	if len(g.head) < len(startMark) {
		return len(p), nil
	}
	g.started, g.head = true, nil
	held := g.heldTail()
	g.held = fit.NewTail(0)
	if len(held) > 0 {
		if _, err := g.stderr.Write(held); err != nil {
			return 0, err
		}
	}
	if n < len(p) {
		if _, err := g.stdout.Write(p[n:]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
