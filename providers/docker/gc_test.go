package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// GC removes labelled leftovers of this instance whose binding is gone,
// and with a bound the older ones, and nothing else.
func TestGC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	cli, image := testEngine(t)
	ctx := context.Background()
	live := h.commands()
	h.setup(live, "")
	h.shell(live, "true")

	mark := "gc-" + newResourceID()
	create := func(name string, labels map[string]string) {
		t.Helper()
		labels[testLabel] = mark
		if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels}); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Cmd: []string{"true"}, Labels: labels},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = removeLabelled(context.Background(), cli, filters.NewArgs(filters.Arg("label", testLabel+"="+mark)))
	})
	created := strconv.FormatInt(time.Now().Unix(), 10)
	gone := "brain-" + mark + "-gone"
	create(gone, map[string]string{LabelProvider: ProviderName, LabelInstance: h.p.instance, LabelBinding: "s/gone", LabelCreated: created})
	create("brain-"+mark+"-other", map[string]string{LabelProvider: ProviderName, LabelInstance: "another", LabelBinding: "s/gone", LabelCreated: created})
	create("brain-"+mark+"-plain", map[string]string{})

	// The CLI, on the provider's state directory, removes only the leftover.
	var out, errOut bytes.Buffer
	if code := Command(ctx, []string{"gc", "--state", h.p.store.dir, "--older-than", "1h"}, &out, &errOut); code != 0 {
		t.Fatalf("gc command = %d: %s", code, errOut.String())
	}
	var rep GCReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("gc output %q: %v", out.String(), err)
	}
	if strings.Join(rep.Containers, ",") != gone || strings.Join(rep.Volumes, ",") != gone {
		t.Fatalf("gc removed %+v; want only %s", rep, gone)
	}
	marked := filters.NewArgs(filters.Arg("label", testLabel+"="+mark))
	if ctrs, vols := countLabelled(t, cli, marked); ctrs != 2 || vols != 2 {
		t.Fatalf("after gc: %d containers, %d volumes of the foreign ones; want 2, 2", ctrs, vols)
	}
	if ctrs, vols := h.bindingResources(live); ctrs != 1 || vols != 1 {
		t.Fatalf("gc touched a live binding: %d containers, %d volumes", ctrs, vols)
	}

	// With a bound shorter than the live binding's age, its resources go
	// too, and the binding reports the loss instead of re-creating them.
	h.p.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	rep, err := h.p.GC(ctx, time.Hour)
	if err != nil || len(rep.Containers) != 1 || len(rep.Volumes) != 1 {
		t.Fatalf("GC(1h) two hours later = %+v, %v; want the live binding's container and volume", rep, err)
	}
	failure(t, h.post(live.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil)), envapi.CodeResourceLost)
	if ctrs, vols := countLabelled(t, cli, marked); ctrs != 2 || vols != 2 {
		t.Fatalf("GC touched foreign resources: %d containers, %d volumes left", ctrs, vols)
	}
}
