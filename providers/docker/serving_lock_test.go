package docker

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A second provider started on a state directory that a provider serves
// refuses to start, saying so, and touches nothing: the commands the
// first one runs go on (it would kill them at its start, taking them for
// those of a provider that is gone).
func TestSecondProviderOnAServedStateDirRefused(t *testing.T) {
	t.Parallel()
	r := newKillRig(t, "served-twice")
	_, url := startChild(t, r.stateDir, r.profiles)
	if rc := r.post(url, r.c.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup = %+v", rc)
	}
	leftoverCommand(t, r, url)
	st, ok, err := r.probe.store.get(bindingKey(r.c))
	if err != nil || !ok {
		t.Fatalf("state: %v %v", ok, err)
	}

	second := exec.Command(os.Args[0], "-test.run=^TestChildProvider$")
	second.Env = append(os.Environ(), "BRAIN_DOCKER_CHILD_ARGS="+strings.Join([]string{
		"--listen", "127.0.0.1:0", "--state", r.stateDir, "--profiles", r.profiles, "--token", testToken,
	}, "\x1f"))
	var errOut bytes.Buffer
	second.Stderr = &errOut
	out, err := second.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Process.Kill(); _ = second.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.Contains(line, "listening on") {
		t.Fatalf("a second provider serves the state directory: %q", line)
	}
	if err := second.Wait(); err == nil || !strings.Contains(errOut.String(), r.stateDir) || !strings.Contains(errOut.String(), "another provider") {
		t.Fatalf("the second provider ended with %v: %s; want a failure naming the state directory in use", err, errOut.String())
	}
	if left := sleepers(t, r, st.resourceName()); len(left) != 3 {
		t.Fatalf("after the second provider's start the first one's command runs as %q, want its 3 sleeps", left)
	}
}
