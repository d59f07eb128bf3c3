package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// brainBinary builds brain once per test binary.
func brainBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pgstore-brain-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "brain")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/brain-in-go/brain/brain/cmd/brain").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building brain: %v", buildErr)
	}
	return binary
}

type node struct {
	cmd  *exec.Cmd
	url  string
	dir  string // data directory
	done chan struct{}
	// stderr is the process's log, shown when the test fails.
	stderr *envtest.Buffer
}

// serveNode runs one brain serve process on the database.
func serveNode(t *testing.T, dbURL, keyFile string) *node {
	return serveNodeEnv(t, dbURL, keyFile, "BRAIN_LISTEN=127.0.0.1:0")
}

// serveNodeEnv runs one brain serve process on the database with the
// extra environment env.
func serveNodeEnv(t testing.TB, dbURL, keyFile string, env ...string) *node {
	t.Helper()
	n, err := launchNode(t, dbURL, keyFile, env...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// launchNode is serveNodeEnv for any goroutine: it answers an error
// instead of failing t. The process is killed when t ends.
func launchNode(t testing.TB, dbURL, keyFile string, env ...string) (*node, error) {
	dir := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(brainBinary(t), "serve")
	cmd.Env = append(os.Environ(), "BRAIN_DATA_DIR="+dir,
		"BRAIN_API_TOKEN=tok", "BRAIN_LOG_LEVEL=warn", "BRAIN_DATABASE_URL="+dbURL, "BRAIN_SEALING_KEY_FILE="+keyFile)
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &envtest.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &node{cmd: cmd, dir: dir, done: make(chan struct{}), stderr: stderr}
	go func() { cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.done
		if log := stderr.String(); t.Failed() && log != "" {
			t.Logf("log of the node started at %s:\n%s", n.url, log)
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "Brain is serving on "); ok {
				urls <- u
			}
		}
	}()
	select {
	case n.url = <-urls:
	case <-n.done:
		return nil, fmt.Errorf("brain serve exited: %s", stderr.String())
	case <-time.After(60 * time.Second):
		return nil, errors.New("brain serve did not start")
	}
	return n, nil
}

func (n *node) client(t testing.TB) *client.Client {
	c, err := client.New(n.url, &client.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestThreeServeProcesses runs three brain serve processes on one
// database: a session created on A with an idempotency key is answered
// again, not created twice, when the key is retried on C; it runs on A, is
// read on B and streamed on C; after A is killed with SIGKILL, B serves the session's next message
// and the transcript holds both turns.
func TestThreeServeProcesses(t *testing.T) {
	dbURL := pgtest.Database(t)
	keyFile := filepath.Join(t.TempDir(), "sealing.key")
	os.WriteFile(keyFile, []byte(strings.Repeat("5a", 32)), 0o600)
	a, b, c := serveNode(t, dbURL, keyFile), serveNode(t, dbURL, keyFile), serveNode(t, dbURL, keyFile)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}}
	s, err := a.client(t).Sessions.Create(ctx, req, client.IdempotencyKey("create-1"))
	if err != nil {
		t.Fatal(err)
	}
	// The same key retried on C answers A's session, and creates nothing.
	again, err := c.client(t).Sessions.Create(ctx, req, client.IdempotencyKey("create-1"))
	if err != nil || again.ID != s.ID {
		t.Fatalf("retry on C = %v, %v; want session %s", again, err, s.ID)
	}
	if list, err := b.client(t).Sessions.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("sessions on B = %d, %v; want 1", len(list), err)
	}
	streamed := make(chan string, 64)
	go func() {
		defer close(streamed)
		for ev, err := range c.client(t).Sessions.Open(s.ID).Events(ctx, 0, client.Follow()) {
			if err != nil {
				return
			}
			streamed <- ev.EventType
			if ev.EventType == api.KindTurnEnded {
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	if _, err := s.Send(ctx, api.UserInput{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for k := range streamed {
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != api.KindTurnEnded {
		t.Fatalf("node C streamed %v, want A's turn through turn_ended", kinds)
	}
	if tr, err := b.client(t).Sessions.Open(s.ID).Transcript(ctx); err != nil || !strings.Contains(string(mustText(tr)), "echo: one") {
		t.Fatalf("transcript on B = %+v, %v", tr, err)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	// A gives the session's lease back in the background once the turn
	// ended; if it died before that reached the database, B answers 503
	// overloaded (retryable) until the lease (10 s) lapses.
	for killed := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		_, err := b.client(t).Sessions.Open(s.ID).Send(ctx, api.UserInput{Message: "two"}, client.IdempotencyKey("two"))
		var ae *api.ApiError
		if err == nil {
			break
		}
		if !errors.As(err, &ae) || !ae.Retryable || time.Since(killed) > 12*time.Second {
			t.Fatalf("message to B %v after A died = %v", time.Since(killed), err)
		}
	}
	tr, err := c.client(t).Sessions.Open(s.ID).Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if text := string(mustText(tr)); !strings.Contains(text, "echo: one") || !strings.Contains(text, "echo: two") {
		t.Fatalf("transcript on C = %q, want both turns", text)
	}
}
