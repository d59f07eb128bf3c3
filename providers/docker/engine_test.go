package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// Test images are built locally FROM scratch with the host's static
// busybox; nothing is pulled.
const (
	testImage      = "brain-docker-test:busybox"
	testLabel      = "brain.test"
	testLabelValue = "providers-docker"
	busyboxPath    = "/bin/busybox"
)

var engine struct {
	once  sync.Once
	cli   *client.Client
	image string // image ID
	err   error
}

// testEngine returns a client and the test image's ID. It skips the test
// when no Engine answers, unless BRAIN_REQUIRE_DOCKER=1.
func testEngine(t testing.TB) (*client.Client, string) {
	t.Helper()
	engine.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cli, err := newClient()
		if err != nil {
			engine.err = err
			return
		}
		if _, err := cli.Ping(ctx); err != nil {
			engine.err = fmt.Errorf("no Docker Engine: %w", err)
			return
		}
		engine.cli = cli
		engine.image, engine.err = buildTestImage(ctx, cli)
	})
	if engine.err != nil {
		if os.Getenv("BRAIN_REQUIRE_DOCKER") == "1" {
			t.Fatalf("Docker Engine required (BRAIN_REQUIRE_DOCKER=1): %v", engine.err)
		}
		t.Skipf("skipping: %v (set BRAIN_REQUIRE_DOCKER=1 to fail instead)", engine.err)
	}
	return engine.cli, engine.image
}

func buildTestImage(ctx context.Context, cli *client.Client) (string, error) {
	bb, err := os.ReadFile(busyboxPath)
	if err != nil {
		return "", fmt.Errorf("static busybox for the test image: %w", err)
	}
	if err := checkStatic(bb); err != nil {
		return "", fmt.Errorf("%s for the test image (install busybox-static): %w", busyboxPath, err)
	}
	dockerfile := "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n" +
		"RUN mkdir /workspace && chown 1000:1000 /workspace\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, []byte(dockerfile)}, {"busybox", 0o755, bb}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags:        []string{testImage},
		Labels:      map[string]string{testLabel: testLabelValue},
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return "", fmt.Errorf("build test image: %w", err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("build test image: %w", err)
		}
		if msg.Error != "" {
			return "", fmt.Errorf("build test image: %s", msg.Error)
		}
	}
	info, err := cli.ImageInspect(ctx, testImage)
	if err != nil {
		return "", fmt.Errorf("inspect test image: %w", err)
	}
	return info.ID, nil
}

// cleanupInstance removes every container and volume of a provider
// instance when the test ends.
func cleanupInstance(t testing.TB, cli *client.Client, instance string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := removeLabelled(ctx, cli, instanceFilter(instance)); err != nil {
			t.Errorf("cleanup of instance %s: %v", instance, err)
		}
	})
}

// removeLabelled force-removes the containers, then the volumes, matching f.
func removeLabelled(ctx context.Context, cli *client.Client, f filters.Args) error {
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := removeContainer(ctx, cli, c.ID); err != nil {
			return err
		}
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return err
	}
	for _, v := range vs.Volumes {
		if err := removeVolume(ctx, cli, v.Name); err != nil {
			return err
		}
	}
	return nil
}

// countLabelled counts the containers and volumes matching f.
func countLabelled(t testing.TB, cli *client.Client, f filters.Args) (containers, volumes int) {
	t.Helper()
	ctx := context.Background()
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	return len(cs), len(vs.Volumes)
}

// checkStatic refuses an executable that needs a program interpreter: a
// FROM scratch image has no dynamic loader to run it.
func checkStatic(exe []byte) error {
	f, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked")
		}
	}
	return nil
}
