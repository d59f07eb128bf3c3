package docker

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// Benchmarks of PERFORMANCE.md row 11. The baselines do the bare Engine
// work with the same client: create + start (the same hardened config,
// without a volume) + one exec of true; and one exec of true in a running
// container.

type benchProvider struct {
	p     *Provider
	url   string
	brain *envtest.Brain
	n     int
}

func newBenchProvider(b *testing.B) *benchProvider {
	cli, image := testEngine(b)
	p, err := New(Config{Profiles: Profiles{"default": {Image: image}}, StateDir: b.TempDir(), Client: cli})
	if err != nil {
		b.Fatal(err)
	}
	cleanupInstance(b, cli, p.Instance())
	srv := httptest.NewServer(p.Handler(""))
	b.Cleanup(srv.Close)
	br := envtest.New()
	b.Cleanup(br.Close)
	return &benchProvider{p: p, url: srv.URL, brain: br}
}

func (bp *benchProvider) post(b *testing.B, cmd envapi.Command, want envapi.ReceiptType) {
	status, body, resp, err := envtest.Post(context.Background(), nil, bp.url, "", cmd)
	if err != nil || status != 200 || resp.Receipt.Type != want {
		b.Fatalf("%s: %d %v %s", cmd.Operation.Request.Type, status, err, body)
	}
}

func (bp *benchProvider) binding(b *testing.B) *envtest.Commands {
	bp.n++
	c := envtest.NewCommands(fmt.Sprintf("bench-%d", bp.n), "box")
	c.Brain = bp.brain
	bp.post(b, c.Setup(nil), envapi.ReceiptAccepted)
	return c
}

var benchTrue = mustJSON(toolset.CommandInput{Argv: []string{"true"}})

// The provider and its baseline alternate within one loop so that drift of
// a shared machine hits both alike; each reports its median (ms) and the
// ratio of the medians.

func BenchmarkFirstExecute(b *testing.B) {
	bp := newBenchProvider(b)
	cli, image := testEngine(b)
	ctx := context.Background()
	prof := Profile{Image: image}.withDefaults()
	instance := "bench-" + newResourceID()
	cleanupInstance(b, cli, instance)
	labels := map[string]string{LabelProvider: ProviderName, LabelInstance: instance}
	var prov, raw []time.Duration
	runProv := func() {
		c := bp.binding(b)
		start := time.Now()
		bp.post(b, c.Execute(tool(toolset.ToolCommand), benchTrue, nil), envapi.ReceiptResult)
		prov = append(prov, time.Since(start))
		bp.post(b, c.Teardown(), envapi.ReceiptAccepted)
	}
	runRaw := func() {
		name := "brain-bench-" + newResourceID()
		cfg, hc := hardenedConfig(prof, image, name, labels)
		hc.Mounts = nil
		start := time.Now()
		if _, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, name); err != nil {
			b.Fatal(err)
		}
		if err := cli.ContainerStart(ctx, name, container.StartOptions{}); err != nil {
			b.Fatal(err)
		}
		rawExec(b, cli, name, prof.User)
		raw = append(raw, time.Since(start))
		if err := removeContainer(ctx, cli, name); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			runProv()
			runRaw()
		} else {
			runRaw()
			runProv()
		}
	}
	report(b, prov, raw)
}

func BenchmarkLaterExecute(b *testing.B) {
	bp := newBenchProvider(b)
	c := bp.binding(b)
	bp.post(b, c.Execute(tool(toolset.ToolCommand), benchTrue, nil), envapi.ReceiptResult)
	cli, image := testEngine(b)
	ctx := context.Background()
	prof := Profile{Image: image}.withDefaults()
	instance := "bench-" + newResourceID()
	cleanupInstance(b, cli, instance)
	name := "brain-bench-" + newResourceID()
	labels := map[string]string{LabelProvider: ProviderName, LabelInstance: instance}
	if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels}); err != nil {
		b.Fatal(err)
	}
	cfg, hc := hardenedConfig(prof, image, name, labels)
	if _, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, name); err != nil {
		b.Fatal(err)
	}
	if err := cli.ContainerStart(ctx, name, container.StartOptions{}); err != nil {
		b.Fatal(err)
	}
	var prov, raw []time.Duration
	runProv := func() {
		start := time.Now()
		bp.post(b, c.Execute(tool(toolset.ToolCommand), benchTrue, nil), envapi.ReceiptResult)
		prov = append(prov, time.Since(start))
	}
	runRaw := func() {
		start := time.Now()
		rawExec(b, cli, name, prof.User)
		raw = append(raw, time.Since(start))
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			runProv()
			runRaw()
		} else {
			runRaw()
			runProv()
		}
	}
	report(b, prov, raw)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func report(b *testing.B, prov, raw []time.Duration) {
	if len(prov) == 0 {
		return
	}
	mp, mr := median(prov), median(raw)
	b.ReportMetric(float64(mp.Microseconds())/1000, "provider-ms")
	b.ReportMetric(float64(mr.Microseconds())/1000, "raw-ms")
	b.ReportMetric(float64(mp)/float64(mr), "ratio")
	b.ReportMetric(0, "ns/op")
}

// rawExec is the bare Engine exec of true: create, attach, read, inspect.
func rawExec(b testing.TB, cli *client.Client, ctr, user string) {
	ctx := context.Background()
	ex, err := cli.ContainerExecCreate(ctx, ctr, container.ExecOptions{
		User: user, Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true, WorkingDir: workspaceDir,
	})
	if err != nil {
		b.Fatal(err)
	}
	att, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := stdcopy.StdCopy(io.Discard, io.Discard, att.Reader); err != nil {
		b.Fatal(err)
	}
	att.Close()
	info, err := cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil || info.ExitCode != 0 {
		b.Fatalf("exec inspect: %+v %v", info, err)
	}

}
