package docker

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// absentNetwork is the name of a network the Engine does not have.
func absentNetwork() string {
	return "brain-docker-test-absent-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// A profile naming a network the Engine does not have, which the Engine
// would refuse only when the first execute creates the container, is
// refused at start: "brain env docker" names the profile and the network,
// and does not serve it.
func TestCommandRefusesAbsentNetwork(t *testing.T) {
	t.Parallel()
	_, image := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := absentNetwork()
	var out, errb strings.Builder
	args := []string{"--listen", "127.0.0.1:0", "--state", t.TempDir(), "--image", image, "--no-auth", "--network", name}
	got := Command(ctx, args, &out, &errb)
	if got != 2 || !strings.Contains(errb.String(), `profile "default"`) || !strings.Contains(errb.String(), strconv.Quote(name)) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming profile default and network %s", got, out.String(), errb.String(), name)
	}
	if strings.Contains(out.String(), "listening") {
		t.Fatalf("served a profile whose network is absent: %q", out.String())
	}
}

// A setup naming a profile whose network the Engine does not have is
// invalid_configuration naming the network, and records nothing, rather
// than accepted with every execute then failing; once the network exists,
// the same profile is set up and runs.
func TestSetupRefusesAbsentNetwork(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	name := absentNetwork()
	h := newHarnessWith(t, "", cli, Profiles{"default": {Image: image}, "net": {Image: image, Network: name}})

	c := h.commands()
	r := h.post(c.Setup([]byte(`{"profile":"net"}`)))
	failure(t, r, envapi.CodeInvalidConfiguration)
	if !strings.Contains(r.Message, `profile "net"`) || !strings.Contains(r.Message, strconv.Quote(name)) {
		t.Fatalf("message %q does not name the profile and the network %s", r.Message, name)
	}
	if _, ok, err := h.p.store.get(bindingKey(c)); ok || err != nil {
		t.Fatalf("a refused setup left state (%v, %v)", ok, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := cli.NetworkCreate(ctx, name, network.CreateOptions{
		Internal: true, Labels: map[string]string{testLabel: testLabelValue},
	})
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	t.Cleanup(func() { _ = cli.NetworkRemove(context.Background(), created.ID) })
	h.setup(c, "net")
	defer h.post(c.Teardown())
	if out := h.shell(c, "tail -n +3 /proc/net/dev | grep -c eth0"); out.ExitCode != 0 || out.Stdout != "1\n" {
		t.Fatalf("a container on %s: %+v", name, out)
	}
}
