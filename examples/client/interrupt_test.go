package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

// TestInterruptCancelsTheTurn runs the client as a process against a real
// Brain and interrupts it (Ctrl-C's SIGINT, and SIGTERM) once its turn
// runs, or lets its --timeout pass: it cancels the turn it started before
// it exits 1, saying why and that it did on stderr, and the turn ends
// cancelled in Brain rather than going on there, unseen, until its model
// answers.
func TestInterruptCancelsTheTurn(t *testing.T) {
	url := startBrain(t, nil)
	c, err := client.New(url, &client.Options{Token: brainToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cases := []struct {
		name   string
		sig    os.Signal // nil: none, the timeout passes
		args   []string
		reason string
	}{
		{"interrupt", os.Interrupt, nil, "interrupt signal received"},
		{"terminate", syscall.SIGTERM, nil, "terminated signal received"},
		{"timeout", nil, []string{"--timeout", "10s"}, "gave up after --timeout 10s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			// The model replies only after two minutes.
			args := append([]string{"--url", url, "--message", `{"reply":"too late","delay_ms":120000}`}, tc.args...)
			cmd := clitest.Command(ctx, args...)
			cmd.Env = append(cmd.Env, "BRAIN_TOKEN="+brainToken)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The first line names the session; "> message" follows once
			// the turn was submitted.
			lines := bufio.NewScanner(out)
			var session string
			for lines.Scan() {
				line := lines.Text()
				if rest, ok := strings.CutPrefix(line, "session "); ok && session == "" {
					session, _, _ = strings.Cut(rest, " ")
				}
				if strings.HasPrefix(line, "> ") {
					break
				}
			}
			if session == "" {
				t.Fatalf("the client never submitted its turn; stderr %q", stderr.String())
			}
			if tc.sig != nil {
				if err := cmd.Process.Signal(tc.sig); err != nil {
					t.Fatal(err)
				}
			}
			go func() {
				for lines.Scan() {
				}
			}()
			err = cmd.Wait()
			var exit *exec.ExitError
			want := "client: " + tc.reason + ": cancelled the turn of session " + session
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), want) {
				t.Fatalf("client interrupted: %v, stderr %q; want exit 1 saying %q", err, stderr.String(), want)
			}

			// In Brain, the turn ended cancelled.
			for ev, err := range c.Sessions.Open(session).Events(ctx, 0, client.Follow()) {
				if err != nil {
					t.Fatalf("events of %s: %v", session, err)
				}
				switch ev.EventType {
				case api.KindTurnEnded:
					t.Fatalf("the turn went on in Brain and ended: %s", ev.Data)
				case api.KindTurnFailed:
					var f api.Failure
					if err := json.Unmarshal(ev.Data, &f); err != nil || f.Code != api.FailureCancelled {
						t.Fatalf("turn failed with %s, want cancelled", ev.Data)
					}
					return
				}
			}
			t.Fatal("the event stream ended before the turn did")
		})
	}
}
