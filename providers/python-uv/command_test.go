package pythonuv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

func TestCommandServesAndStopsGracefully(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	conf := filepath.Join(root, "python-uv.json")
	raw, _ := json.Marshal(map[string]any{
		"uv": uv,
		"projects": map[string]any{
			"plain":   map[string]string{"directory": "plain", "module": "echo"},
			"sleeper": map[string]string{"directory": "plain", "module": "sleeper"},
		},
	})
	if err := os.WriteFile(conf, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "command-test-token"
	t.Setenv(TokenEnv, token)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, exit, stderr := startCommand(t, ctx, "--listen", "127.0.0.1:0", "--config", conf)

	brain := envtest.NewBrain(t)
	s := envtest.NewCommands("cli", "python")
	s.Brain = brain
	// Requests outlive ctx: the provider, not the client, must end them.
	pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer pcancel()
	if status, _, _, _ := envtest.Post(pctx, nil, url, "", s.Setup(nil)); status != 401 {
		t.Fatalf("without the token: status %d, want 401", status)
	}
	post := func(cmd envapi.Command) envapi.Receipt {
		t.Helper()
		status, body, resp, err := envtest.Post(pctx, nil, url, token, cmd)
		if err != nil || resp == nil {
			t.Fatalf("post: %d %v %s", status, err, body)
		}
		return resp.Receipt
	}
	if rc := post(s.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %s", describe(rc))
	}
	if rc := post(s.Execute(impl("plain"), json.RawMessage(`[1,2]`), nil)); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"echo":[1,2]}`) {
		t.Fatalf("execute: %s", describe(rc))
	}
	// stderr is no terminal: the preparation's progress is plain lines,
	// in order.
	progressRE := regexp.MustCompile(`(?m)^python-uv: project plain: uv sync --locked (started|finished in \S+)$`)
	if got := progressRE.FindAllStringSubmatch(stderr.String(), -1); len(got) != 2 || got[0][1] != "started" || got[1][1] == "started" {
		t.Errorf("progress lines %q in stderr:\n%s", got, stderr.String())
	}

	// An invocation still running when the command stops is cancelled and
	// its processes are killed: nothing outlives the provider.
	pidFile := filepath.Join(t.TempDir(), "pids.json")
	input, _ := json.Marshal(map[string]string{"pid_file": pidFile})
	type answer struct {
		rc  envapi.Receipt
		err error
	}
	running := make(chan answer, 1)
	go func() {
		_, body, resp, err := envtest.Post(pctx, nil, url, token, s.Execute(impl("sleeper"), input, nil))
		if err == nil && resp == nil {
			err = errors.New(string(body))
		}
		var rc envapi.Receipt
		if resp != nil {
			rc = resp.Receipt
		}
		running <- answer{rc, err}
	}()
	data, err := waitForFile(pctx, pidFile)
	if err != nil {
		t.Fatalf("sleeper did not start: %v", err)
	}
	var pids sleeperPids
	if err := json.Unmarshal(data, &pids); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
		}
	case <-time.After(45 * time.Second):
		t.Fatal("Command did not stop")
	}
	a := <-running
	if a.err != nil {
		t.Fatalf("the running execute got no answer: %v", a.err)
	}
	wantFailure(t, a.rc, envapi.CodeCancelled)
	checkGone(t, pids)
}

func TestCommandArguments(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{}, 2},
		{[]string{"--project", "broken"}, 2},
		{[]string{"--project", "p=" + filepath.Join(root, "plain") + ":echo", "extra"}, 2},
		{[]string{"--no-auth", "--config", filepath.Join(root, "missing.json")}, 1},
		{[]string{"--no-auth", "--uv", uv, "--project", "p=" + filepath.Join(root, "nowhere") + ":echo"}, 1},
		{[]string{"--no-auth", "--uv", uv, "--project", "p=" + filepath.Join(root, "plain") + ":-c"}, 1},
		{[]string{"--uv", uv, "--token", "", "--listen", "0.0.0.0:0", "--project", "p=" + filepath.Join(root, "plain") + ":echo"}, 2},
		{[]string{"-h"}, 0},
	} {
		t.Setenv(TokenEnv, "")
		var out, errb bytes.Buffer
		if got := Command(context.Background(), tc.args, &out, &errb); got != tc.want {
			t.Errorf("Command(%q) = %d, want %d; stderr: %s", tc.args, got, tc.want, errb.String())
		}
	}
}

// startCommand runs Command with args until ctx ends, and answers the URL
// of its listening line, the channel of its exit status and its stderr.
func startCommand(t *testing.T, ctx context.Context, args ...string) (string, <-chan int, *envtest.Buffer) {
	t.Helper()
	outR, outW := io.Pipe()
	stderr := &envtest.Buffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- Command(ctx, args, outW, stderr)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v (stderr: %s)", err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	url := regexp.MustCompile(`http://\S+`).FindString(line)
	if url == "" {
		t.Fatalf("no URL in %q", line)
	}
	return url, exit, stderr
}
