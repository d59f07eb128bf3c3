package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// An image that declares a VOLUME gets an anonymous volume with every
// container made from it (the probe at setup, the chown container, the
// binding's container): their removal leaves none of them behind.
func TestTeardownLeavesNoAnonymousVolumes(t *testing.T) {
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	img := buildDerivedImage(t, ctx, cli, "brain-docker-test:volume", "RUN mkdir /data && chown 1000:1000 /data\nVOLUME /data\n")
	before := unlabelledVolumes(t, ctx, cli)

	// The user of "other" does not own the image's /workspace: its
	// allocation runs the chown container too.
	p, err := New(Config{Profiles: Profiles{"default": {Image: img}, "other": {Image: img, User: "1001:1002"}}, StateDir: t.TempDir(), Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	cleanupInstance(t, cli, p.Instance())
	srv := httptest.NewServer(p.Handler(testToken))
	defer srv.Close()
	h := &harness{t: t, p: p, url: srv.URL, brain: envtest.NewBrain(t)}
	c := h.commands()
	h.setup(c, "")
	if out := h.shell(c, "echo kept > /data/f && cat /data/f"); out.Stdout != "kept\n" {
		t.Fatalf("the image's volume: %+v", out)
	}
	c2 := h.commands()
	h.setup(c2, "other")
	if out := h.shell(c2, "echo hi > f && cat f"); out.Stdout != "hi\n" {
		t.Fatalf("the chowned workspace: %+v", out)
	}
	for _, c := range []*envtest.Commands{c, c2} {
		if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
			t.Fatalf("teardown = %+v", r)
		}
	}
	for name := range unlabelledVolumes(t, ctx, cli) {
		if !before[name] {
			t.Errorf("volume %s is left after teardown", name)
			_ = cli.VolumeRemove(context.Background(), name, true)
		}
	}
}

// unlabelledVolumes lists the Engine's volumes without labels: the
// anonymous ones (every volume the provider names carries its labels).
func unlabelledVolumes(t *testing.T, ctx context.Context, cli *client.Client) map[string]bool {
	t.Helper()
	vs, err := cli.VolumeList(ctx, volume.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, v := range vs.Volumes {
		if len(v.Labels) == 0 {
			names[v.Name] = true
		}
	}
	return names
}

// buildDerivedImage builds tag FROM the test image with the Dockerfile
// lines more, and removes it when the test ends; it returns its ID.
func buildDerivedImage(t *testing.T, ctx context.Context, cli *client.Client, tag, more string) string {
	t.Helper()
	return buildDerivedImageWith(t, ctx, cli, tag, more, nil)
}

// buildDerivedImageWith is buildDerivedImage with files (name → content,
// executable) in the build's context, for the lines' COPY.
func buildDerivedImageWith(t *testing.T, ctx context.Context, cli *client.Client, tag, more string, files map[string][]byte) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	add("Dockerfile", 0o644, []byte("FROM "+testImage+"\n"+more))
	for name, data := range files {
		add(name, 0o755, data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags: []string{tag}, Labels: map[string]string{testLabel: testLabelValue},
		Remove: true, ForceRemove: true, Version: build.BuilderV1,
	})
	if err != nil {
		t.Fatalf("build %s: %v", tag, err)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			resp.Body.Close()
			t.Fatalf("build %s: %v", tag, err)
		}
		if msg.Error != "" {
			resp.Body.Close()
			t.Fatalf("build %s: %s", tag, msg.Error)
		}
	}
	resp.Body.Close()
	info, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatalf("inspect %s: %v", tag, err)
	}
	t.Cleanup(func() {
		_, _ = cli.ImageRemove(context.Background(), info.ID, image.RemoveOptions{Force: true})
	})
	return info.ID
}
