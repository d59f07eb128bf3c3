package clitest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Process is the command running in a process of its own, started by
// Start.
type Process struct {
	cmd            *exec.Cmd
	stdout, stderr *buffer
	done           chan struct{}
	code           int
}

// Start runs the command with args and env (NAME=value) added to the
// test's environment. The process is killed when the test ends.
func Start(t *testing.T, args []string, env ...string) *Process {
	t.Helper()
	p := &Process{stdout: &buffer{}, stderr: &buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			p.code = exit.ExitCode()
		case err != nil:
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// Stdout and Stderr answer what the process wrote so far.
func (p *Process) Stdout() string { return p.stdout.String() }
func (p *Process) Stderr() string { return p.stderr.String() }

// Signal sends sig to the process.
func (p *Process) Signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// WaitOutput waits up to within for the process's stdout (or stderr) to
// hold text, and reports whether it did.
func (p *Process) WaitOutput(stderr bool, text string, within time.Duration) bool {
	b := p.stdout
	if stderr {
		b = p.stderr
	}
	deadline := time.Now().Add(within)
	for !strings.Contains(b.String(), text) {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-p.done:
			return strings.Contains(b.String(), text)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

// Exited waits up to within for the process to exit and answers its exit
// status (-1 when a signal ended it); ok is false when it is still
// running.
func (p *Process) Exited(within time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.code, true
	case <-time.After(within):
		return 0, false
	}
}

// buffer is a bytes.Buffer safe for a writer and readers at once.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
