package proctree

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// pipes owns the standard streams of one run. The write ends go to the
// child as files, so exec.Cmd.Wait returns when the leader exits, not when
// the last holder of a pipe does; the readers are drained separately.
type pipes struct {
	readers  []*os.File // parent's read ends
	childEnd []*os.File // ends handed to the child, closed after start
	stdin    *os.File   // parent's write end of stdin
	input    []byte
	wg       sync.WaitGroup
}

func newPipes(cmd *exec.Cmd, s Spec) (*pipes, error) {
	p := &pipes{input: s.Stdin}
	out := func(w io.Writer) (*os.File, error) {
		r, wf, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		p.readers = append(p.readers, r)
		p.childEnd = append(p.childEnd, wf)
		p.wg.Add(1)
		go p.drain(r, w)
		return wf, nil
	}
	var err error
	if cmd.Stdout, err = out(s.Stdout); err != nil {
		p.abort()
		return nil, err
	}
	if cmd.Stderr, err = out(s.Stderr); err != nil {
		p.abort()
		return nil, err
	}
	if s.Stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			p.abort()
			return nil, err
		}
		p.childEnd = append(p.childEnd, r)
		p.stdin = w
		cmd.Stdin = r
	}
	return p, nil
}

func (p *pipes) drain(r *os.File, w io.Writer) {
	defer p.wg.Done()
	if w == nil {
		w = io.Discard
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// started closes the child's ends in the parent and feeds stdin.
func (p *pipes) started() {
	for _, f := range p.childEnd {
		f.Close()
	}
	p.childEnd = nil
	if p.stdin != nil {
		go func() {
			_, _ = p.stdin.Write(p.input) // EPIPE when the program ignores it
			p.stdin.Close()
		}()
	}
}

// abort releases everything after a failed start.
func (p *pipes) abort() {
	for _, f := range p.childEnd {
		f.Close()
	}
	p.childEnd = nil
	if p.stdin != nil {
		p.stdin.Close()
	}
	p.finish(0)
}

// finish waits for the readers to reach end of file, at most grace, then
// cuts them off and closes the read ends.
func (p *pipes) finish(grace time.Duration) {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	for _, r := range p.readers {
		if err := r.SetReadDeadline(time.Now()); err != nil && !errors.Is(err, os.ErrClosed) {
			r.Close()
		}
	}
	<-done
	for _, r := range p.readers {
		r.Close()
	}
}
