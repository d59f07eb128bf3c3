package docker

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// TestCommandShowsProgress: "brain env docker" with stderr not a terminal
// reports each step of a binding's setup and allocation as plain lines,
// in order, each start followed by its end.
func TestCommandShowsProgress(t *testing.T) {
	cli, image := testEngine(t)
	state := t.TempDir()
	probe, err := newProvider(Config{StateDir: state, Client: cli}, false)
	if err != nil {
		t.Fatal(err)
	}
	cleanupInstance(t, cli, probe.Instance())
	const token = "cli-test-token"
	t.Setenv(TokenEnv, token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr envtest.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- Command(ctx, []string{"--listen", "127.0.0.1:0", "--state", state, "--image", image}, outW, &stderr)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v (stderr: %s)", err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	url := regexp.MustCompile(`http://\S+`).FindString(line)

	c := envtest.NewCommands("cli-progress", "box")
	c.Brain = envtest.NewBrain(t)
	post := func(cmd envapi.Command) envapi.Receipt {
		t.Helper()
		pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer pcancel()
		status, body, resp, err := envtest.Post(pctx, nil, url, token, cmd)
		if err != nil || resp == nil {
			t.Fatalf("post: %d %v %s", status, err, body)
		}
		return resp.Receipt
	}
	if r := post(c.Setup(nil)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup = %+v", r)
	}
	if r := post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil)); r.Type != envapi.ReceiptResult {
		t.Fatalf("execute = %+v", r)
	}
	post(c.Teardown())
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("Command did not stop")
	}
	subject := "docker: binding cli-progress/box: "
	var got []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, subject); ok {
			got = append(got, regexp.MustCompile(` in \S+$`).ReplaceAllString(rest, " in T"))
		}
	}
	want := []string{
		"image " + image + " started", "image " + image + " finished in T",
		"create volume started", "create volume finished in T",
		"create container started", "create container finished in T",
		"start container started", "start container finished in T",
	}
	// A chown step follows when the image's /workspace is not the user's.
	if len(got) == len(want)+2 {
		want = append(want, "chown workspace started", "chown workspace finished in T")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress lines:\n%s\nwant:\n%s\nstderr:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), stderr.String())
	}
	if strings.ContainsRune(stderr.String(), '\r') {
		t.Error("plain output carries carriage returns")
	}
}

// A negative --gc-older-than is refused at start, as gc's --older-than is.
func TestCommandRefusesNegativeGCAge(t *testing.T) {
	var out, errb strings.Builder
	args := []string{"--listen", "127.0.0.1:0", "--state", t.TempDir(), "--image", "x", "--no-auth", "--gc-older-than", "-1h"}
	if got := Command(t.Context(), args, &out, &errb); got != 2 || !strings.Contains(errb.String(), "--gc-older-than") {
		t.Fatalf("exit %d, %q", got, errb.String())
	}
}
