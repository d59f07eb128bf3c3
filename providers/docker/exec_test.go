package docker

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// testContainer allocates a hardened container for low-level tests.
func testContainer(t *testing.T, p Profile) string {
	t.Helper()
	cli, image := testEngine(t)
	instance := "test-" + newResourceID()
	cleanupInstance(t, cli, instance)
	st := &bindingState{Key: "s/e", SessionID: "s", Environment: "e", Resource: newResourceID()}
	p.Image = image
	p = p.withDefaults()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pu, pg, _ := splitUser(p.User)
	owned, err := workspaceOwned(ctx, cli, image, st.resourceName()+"-probe", bindingLabels(instance, st, time.Now()), pu, pg)
	if err != nil {
		t.Fatalf("workspaceOwned: %v", err)
	}
	a, err := createResources(ctx, cli, plan{
		Profile: p, ImageID: image, Name: st.resourceName(),
		Labels: bindingLabels(instance, st, time.Now()),
		Chown:  !owned,
	})
	if err != nil {
		t.Fatalf("createResources: %v", err)
	}
	return a.Container
}

func run(t *testing.T, ctx context.Context, ctr string, s execSpec) (int, string, string, error) {
	t.Helper()
	cli, _ := testEngine(t)
	if s.User == "" {
		s.User = DefaultUser
	}
	if s.Dir == "" {
		s.Dir = workspaceDir
	}
	if s.Tag == "" {
		s.Tag = newResourceID()
	}
	if s.OutputBytes == 0 {
		s.OutputBytes = DefaultOutputBytes
	}
	var out, errb bytes.Buffer
	code, err := runExec(ctx, cli, ctr, s, &out, &errb)
	return code, out.String(), errb.String(), err
}

func TestExecDemuxAndExitCode(t *testing.T) {
	t.Parallel()
	ctr := testContainer(t, Profile{})
	ctx := context.Background()
	code, out, errOut, err := run(t, ctx, ctr, execSpec{
		Argv:  []string{"sh", "-c", "cat; echo err >&2; id -u; pwd; exit 7"},
		Stdin: []byte("in\n"),
	})
	if err != nil {
		t.Fatalf("runExec: %v", err)
	}
	if code != 7 || out != "in\n1000\n/workspace\n" || errOut != "err\n" {
		t.Fatalf("runExec = %d, %q, %q; want 7, %q, %q", code, out, errOut, "in\n1000\n/workspace\n", "err\n")
	}
}

// The workspace belongs to the profile's user, whether the Engine's copy of
// the image's /workspace gave it (the test image's /workspace is owned by
// 1000:1000) or a one-shot chown container did (user 1001:1001).
func TestWorkspaceOwnership(t *testing.T) {
	t.Parallel()
	for _, user := range []string{"1000:1000", "1001:1002"} {
		t.Run(user, func(t *testing.T) {
			t.Parallel()
			ctr := testContainer(t, Profile{User: user})
			code, out, errOut, err := run(t, context.Background(), ctr, execSpec{
				User: user, Argv: []string{"sh", "-c", "echo hi > f && stat -c %u:%g /workspace f"}})
			if want := user + "\n" + user + "\n"; err != nil || code != 0 || out != want {
				t.Fatalf("write in workspace = %d, %q, %q, %v; want 0, %q", code, out, errOut, err, want)
			}
		})
	}
}

func TestExecStopKillsProcessGroup(t *testing.T) {
	t.Parallel()
	ctr := testContainer(t, Profile{})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, _, err := run(t, ctx, ctr, execSpec{
		Argv: []string{"sh", "-c", "(sleep 61; echo late > /workspace/late) & sleep 60"},
		Tag:  "42",
	})
	var stop *stopError
	if !errors.As(err, &stop) || stop.Cleanup != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("runExec = %v; want a clean stop by deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stop took %s", d)
	}
	_, ps, _, err := run(t, context.Background(), ctr, execSpec{Argv: []string{"ps", "-o", "pid,args"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ps, "sleep 6") {
		t.Fatalf("a process of the stopped command survived:\n%s", ps)
	}
}

// The container's keep-alive is the init's child and carries no tag, and it
// may start in the same clock tick as the first command (a process's start
// time counts in ticks of 10 ms): the kill spares it whatever its start
// time, so a kill never stops the container. The group file here names the
// init as the wrapper, so every process of the container started at or
// after the wrapper.
func TestKillSparesKeepAlive(t *testing.T) {
	t.Parallel()
	cli, _ := testEngine(t)
	ctr := testContainer(t, Profile{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code, out, errOut, err := run(t, ctx, ctr, execSpec{
		Argv: []string{"sh", "-c", "echo '999999 1' > /tmp/.brain-exec-early"},
	}); err != nil || code != 0 {
		t.Fatalf("write group file = %d, %q, %q, %v", code, out, errOut, err)
	}
	left, _, err := killGroup(ctx, cli, ctr, DefaultUser, "early", "")
	if err != nil {
		t.Fatalf("killGroup: %v", err)
	}
	if left != "" {
		t.Errorf("the kill found processes %s; want none", left)
	}
	info, err := cli.ContainerInspect(ctx, ctr)
	if err != nil {
		t.Fatal(err)
	}
	if !info.State.Running {
		t.Fatalf("the kill stopped the container: %+v", info.State)
	}
	if code, out, _, err := run(t, ctx, ctr, execSpec{Argv: []string{"ps", "-o", "pid,args"}}); err != nil || code != 0 || !strings.Contains(out, "sleep "+keepAliveSeconds) {
		t.Fatalf("after the kill: %d %v\n%s", code, err, out)
	}
}
