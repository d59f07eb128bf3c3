package docker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envtest"
)

// A setup whose caller gives up while the Engine has not yet answered the
// create of the container that probes who owns the image's /workspace
// leaves no such container behind, even though the Engine makes it after
// the setup stopped asking: Brain records no binding for that setup, so
// no teardown would ever remove it.
func TestStoppedSetupProbeLeavesNoContainer(t *testing.T) {
	t.Parallel()
	cli, img := testEngine(t)
	host, forwarded := lateCreateEngine(t, cli.DaemonHost(), "-probe", 6*time.Second)
	h := newHarnessWith(t, t.TempDir(), relayClient(t, host), Profiles{DefaultProfileName: {Image: img}})
	c := h.commands()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, body, resp, err := envtest.Post(ctx, nil, h.url, testToken, c.Setup(json.RawMessage(`{}`))); err == nil {
		t.Fatalf("setup answered although its caller gave up: %s %+v", body, resp)
	}
	select {
	case <-forwarded:
	case <-time.After(time.Minute):
		t.Fatal("the create of the probe container never reached the Engine")
	}
	// Close waits for the setup to end.
	if err := h.p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n, _ := countLabelled(t, cli, bindingFilter(h.p.instance, bindingKey(c))); n != 0 {
		t.Errorf("%d containers of the abandoned setup are left on the Engine", n)
	}
}
