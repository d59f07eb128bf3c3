package pythonuv

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// providerProcessEnv makes TestProviderProcess serve the provider; its
// value is the uv executable and the plain project's directory, joined by
// a newline.
const providerProcessEnv = "PYTHONUV_TEST_PROVIDER"

// TestProviderProcess is the provider process of
// TestInvocationsOfAKilledProviderAreKilledOnRestart; it is skipped
// otherwise.
func TestProviderProcess(t *testing.T) {
	v := os.Getenv(providerProcessEnv)
	if v == "" {
		t.Skip("runs only as a child process")
	}
	uv, dir, _ := strings.Cut(v, "\n")
	os.Exit(Command(context.Background(), []string{"--listen", "127.0.0.1:0", "--no-auth", "--uv", uv,
		"--project", "sleeper=" + dir + ":sleeper"}, os.Stdout, os.Stderr))
}

func TestInvocationsOfAKilledProviderAreKilledOnRestart(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	dir := filepath.Join(root, "plain")
	child := exec.Command(os.Args[0], "-test.run=^TestProviderProcess$")
	child.Env = append(os.Environ(), providerProcessEnv+"="+uv+"\n"+dir)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	_, rest, found := strings.Cut(line, "http://")
	if err != nil || !found {
		t.Fatalf("start line %q: %v", line, err)
	}
	url := "http://" + strings.Fields(rest)[0]

	brain := envtest.NewBrain(t)
	c := envtest.NewCommands("s1", "python")
	c.Brain = brain
	if _, _, resp, err := envtest.Post(t.Context(), nil, url, "", c.Setup(nil)); err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v %v", resp, err)
	}
	pidFile := filepath.Join(t.TempDir(), "pids")
	input, _ := json.Marshal(map[string]string{"pid_file": pidFile})
	go func() {
		_, _, _, _ = envtest.Post(context.Background(), nil, url, "", c.Execute(impl("sleeper"), input, envtest.Millis(600_000)))
	}()
	var pids struct{ Parent, Child int }
	deadline := time.Now().Add(time.Minute)
	for pids.Child == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if b, err := os.ReadFile(pidFile); err == nil {
			_ = json.Unmarshal(b, &pids)
		}
	}
	if pids.Child == 0 {
		t.Fatal("the invocation did not start")
	}
	all := []int{pids.Parent, pids.Child}
	t.Cleanup(func() {
		for _, pid := range all {
			if !processGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	// The provider dies without a chance to stop its invocation.
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	for _, pid := range all {
		if processGone(pid) {
			t.Fatalf("process %d died with the provider; the test cannot show anything", pid)
		}
	}

	// A provider started again stops what the dead one left running.
	p, err := New(fixtureConfig(uv, root))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	until := time.Now().Add(5 * time.Second)
	for time.Now().Before(until) && !(processGone(pids.Parent) && processGone(pids.Child)) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range all {
		if !processGone(pid) {
			t.Errorf("process %d of the killed provider still runs after the restart", pid)
		}
	}
}
