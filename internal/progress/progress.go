package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Status of a step.
const (
	Started  = "started"
	Finished = "finished"
	Failed   = "failed"
)

// Event is one step of some work starting or ending.
type Event struct {
	// Subject is what the work is for, such as "project demo".
	Subject string
	// Step names the step, such as "uv sync".
	Step string
	// Status is Started, Finished or Failed.
	Status string
	// Elapsed is the step's duration (Finished and Failed).
	Elapsed time.Duration
	// Detail is a short addition, such as an error.
	Detail string
}

func (e Event) String() string {
	s := e.Subject + ": " + e.Step + " " + e.Status
	if e.Status != Started {
		s += " in " + e.Elapsed.Round(time.Millisecond).String()
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Func receives progress events; it must not block.
type Func func(Event)

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Renderer writes events to w. Write it the command's other output (its
// logs) too, so that on a terminal they go above the status line. It is
// safe for concurrent use.
type Renderer struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	prefix string
	status string // the status line on screen (tty)
	active map[string]Event
	order  []string
}

// New answers a renderer for w; tty selects the rewritten status line.
// prefix starts every line (such as "python-uv").
func New(w io.Writer, tty bool, prefix string) *Renderer {
	return &Renderer{w: w, tty: tty, prefix: prefix, active: map[string]Event{}}
}

// For answers a renderer for w, rewriting a status line when w is a
// terminal.
func For(w io.Writer, prefix string) *Renderer { return New(w, IsTerminal(w), prefix) }

const clearLine = "\r\x1b[2K"

// Report shows e. Plain output writes one line per event. On a terminal
// the status line shows the steps still running (the latest first);
// failures are also written above it as lines of their own.
func (r *Renderer) Report(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := e.String()
	if r.prefix != "" {
		line = r.prefix + ": " + line
	}
	if !r.tty {
		fmt.Fprintln(r.w, line)
		return
	}
	key := e.Subject + "\x00" + e.Step
	if e.Status == Started {
		if _, ok := r.active[key]; !ok {
			r.order = append(r.order, key)
		}
		r.active[key] = e
	} else {
		delete(r.active, key)
		for i, k := range r.order {
			if k == key {
				r.order = append(r.order[:i], r.order[i+1:]...)
				break
			}
		}
	}
	var b strings.Builder
	b.WriteString(clearLine)
	if e.Status == Failed {
		b.WriteString(line + "\n")
	}
	status := line
	if n := len(r.order); n > 0 && e.Status != Started {
		a := r.active[r.order[n-1]]
		status = r.prefix + ": " + a.String()
		if r.prefix == "" {
			status = a.String()
		}
	}
	if n := len(r.order); n > 1 {
		status += fmt.Sprintf(" (+%d more)", n-1)
	}
	b.WriteString(status)
	r.status = status
	io.WriteString(r.w, b.String())
}

// Write writes p (whole lines, such as log records) above the status
// line.
func (r *Renderer) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.tty || r.status == "" {
		return r.w.Write(p)
	}
	if _, err := io.WriteString(r.w, clearLine); err != nil {
		return 0, err
	}
	n, err := r.w.Write(p)
	if err == nil {
		_, err = io.WriteString(r.w, r.status)
	}
	return n, err
}

// Done ends the status line, leaving its last text on screen.
func (r *Renderer) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tty && r.status != "" {
		io.WriteString(r.w, "\n")
		r.status = ""
	}
}
