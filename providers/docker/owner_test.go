package docker

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A binding that an earlier version of the provider allocated, which gave
// the profile's user the volume's root alone and so left the files the
// image's /workspace put there to root, gets them as the user's at its
// first execute after the restart, as a fresh binding has them, whether
// its container still runs or was stopped by a detach; the state records
// it, so that it is done once. A chown container that a provider killed
// while it chowned left behind does not stand in the way.
func TestEarlierAllocationGivesTheImageFilesToTheUser(t *testing.T) {
	t.Parallel()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	img := buildDerivedImage(t, ctx, cli, "brain-docker-test:seeded-allocated",
		"RUN mkdir -p /workspace/sub && echo seed > /workspace/seed && chown 1000:1000 /workspace\n")
	for _, detached := range []bool{false, true} {
		t.Run(map[bool]string{false: "running", true: "detached"}[detached], func(t *testing.T) {
			t.Parallel()
			earlierAllocationGivesTheImageFilesToTheUser(t, img, detached)
		})
	}
}

func earlierAllocationGivesTheImageFilesToTheUser(t *testing.T, img string, detached bool) {
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stateDir := t.TempDir()
	profiles := Profiles{DefaultProfileName: {Image: img}}
	h := newHarnessWith(t, stateDir, cli, profiles)
	c := h.commands()
	h.setup(c, "")

	// The allocation as the earlier version made it: the volume and the
	// container, and no chown, since /workspace itself is the user's;
	// its file says whom the owner was decided for, not that it was
	// decided for the whole content.
	b, err := h.p.lookup(bindingKey(c))
	if err != nil {
		t.Fatal(err)
	}
	st := b.state()
	if _, err := createResources(ctx, cli, plan{
		Profile: b.profile, ImageID: st.ImageID, Name: st.resourceName(),
		Labels: bindingLabels(h.p.instance, &st, time.Now()),
	}); err != nil {
		t.Fatalf("allocate as the earlier version did: %v", err)
	}
	if detached {
		// As a detach leaves it.
		if err := stopContainer(ctx, cli, st.resourceName()); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	path := h.p.store.path(bindingKey(c))
	var raw map[string]any
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["phase"] = phaseReady
	delete(raw, "chown")
	delete(raw, "chown_whole")
	if err := os.WriteFile(path, mustJSON(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	// Left by a provider killed while it chowned.
	if _, err := cli.ContainerCreate(ctx, &container.Config{Image: st.ImageID, Entrypoint: []string{"true"}, Labels: bindingLabels(h.p.instance, &st, time.Now())},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, st.resourceName()+"-chown"); err != nil {
		t.Fatalf("create a leftover chown container: %v", err)
	}

	h = newHarnessWith(t, stateDir, cli, profiles)
	out := h.shell(c, "echo more >> seed && touch sub/new && stat -c %u:%g seed sub && cat seed")
	if want := "1000:1000\n1000:1000\nseed\nmore\n"; out.ExitCode != 0 || out.Stdout != want {
		t.Errorf("the image's files in the workspace of an earlier allocation = %+v; want them the user's (%q)", out, want)
	}
	after, ok, err := h.p.store.get(bindingKey(c))
	if err != nil || !ok {
		t.Fatalf("state after the first execute: %v %v", ok, err)
	}
	if !after.ChownWhole || after.ChownFor != "1000:1000" {
		t.Errorf("state after the first execute = %+v; want the owner of the whole workspace recorded", after)
	}
	if _, err := cli.ContainerInspect(ctx, st.resourceName()+"-chown"); err == nil {
		t.Errorf("the chown container %s-chown is left", st.resourceName())
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}
