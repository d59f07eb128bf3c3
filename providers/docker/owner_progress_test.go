package docker

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// hostProgram reads the executable path of the machine the test runs on
// and the shared objects it needs (its interpreter and, recursively, its
// DT_NEEDED libraries, found in the usual directories), keyed by their
// paths; the test is skipped when any of them is missing.
func hostProgram(t *testing.T, path string, into map[string][]byte) {
	t.Helper()
	if _, done := into[path]; done {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%s of the machine, for the test image: %v", path, err)
	}
	into[path] = data
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp := make([]byte, p.Filesz)
			if _, err := p.ReadAt(interp, 0); err != nil {
				t.Skipf("%s: interpreter: %v", path, err)
			}
			hostProgram(t, strings.TrimRight(string(interp), "\x00"), into)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Skipf("%s: libraries: %v", path, err)
	}
	for _, lib := range libs {
		found := ""
		for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
			if _, err := os.Stat(filepath.Join(dir, lib)); err == nil {
				found = filepath.Join(dir, lib)
				break
			}
		}
		if found == "" {
			t.Skipf("%s: library %s not found", path, lib)
		}
		hostProgram(t, found, into)
	}
}

// heldChownImage is an image whose /workspace holds 20 directories of 10
// files of root's and a file hold, whose /bin/sh is the machine's dash and
// whose find ahead of busybox's on the PATH is the machine's GNU find
// (busybox's shell and find run its own chown, whatever the PATH says),
// and whose chown ahead of busybox's on the PATH gives its files their
// owner one at a time and, while hold has mode 644, stops for good at its
// 50th, leaving hold as it is: a chown of the workspace there runs until
// something cuts it short, once it has done part of its work. Given -R (a
// whole tree), it gives /workspace/d/1 to the user before it stops. Each
// tag is an image of its own, removed when its test ends.
func heldChownImage(t *testing.T, tag string) string {
	t.Helper()
	cli, _ := testEngine(t)
	host := map[string][]byte{}
	hostProgram(t, "/bin/dash", host)
	hostProgram(t, "/usr/bin/find", host)
	files := map[string][]byte{}
	var copies strings.Builder
	paths := slices.Sorted(maps.Keys(host))
	for i, path := range paths {
		name := fmt.Sprintf("f%d", i)
		files[name] = host[path]
		if path == "/usr/bin/find" {
			path = "/usr/local/bin/find"
		}
		fmt.Fprintf(&copies, "COPY %s %s\n", name, path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return buildDerivedImageWith(t, ctx, cli, "brain-docker-test:held-chown-"+tag,
		"LABEL brain.test.variant="+tag+"\n"+copies.String()+
			"RUN [\"/bin/busybox\", \"ln\", \"-sf\", \"/bin/dash\", \"/bin/sh\"]\n"+
			"RUN mkdir -p /workspace/d && cd /workspace/d && for i in $(seq 1 20); do mkdir $i && touch $i/a $i/b $i/c $i/d $i/e $i/f $i/g $i/h $i/i $i/j; done && touch /workspace/hold && chmod 644 /workspace/hold\n"+
			"RUN mkdir -p /usr/local/bin && printf '%s\\n' '#!/bin/sh' "+
			"'held() { [ \"$(busybox stat -c %a /workspace/hold)\" = 644 ]; }' "+
			"'if [ \"$1\" = -R ]; then' "+
			"'  busybox chown -R -h \"$3\" /workspace/d/1 || exit 1' "+
			"'  if held; then exec busybox sleep 3600; fi' "+
			"'  exec busybox chown \"$@\"' "+
			"'fi' "+
			"'h=$1 ug=$2' "+
			"'shift 2' "+
			"'n=0' "+
			"'for f do' "+
			"'  n=$((n+1))' "+
			"'  if held; then' "+
			"'    [ \"$n\" -lt 50 ] || exec busybox sleep 3600' "+
			"'    [ \"$f\" = /workspace/hold ] && continue' "+
			"'  fi' "+
			"'  busybox chown \"$h\" \"$ug\" \"$f\" || exit 1' "+
			"'done' > /usr/local/bin/chown && chmod 755 /usr/local/bin/chown\n", files)
}

// workspaceEntries answers, for each entry of the workspace of the
// container ctr, its owner and the time its inode last changed (which a
// chown sets, even to the owner it had).
func workspaceEntries(t *testing.T, ctr string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, out, errOut, err := run(t, ctx, ctr, execSpec{
		Argv: []string{"find", workspaceDir, "-exec", "stat", "-c", "%n|%u:%g|%z", "{}", "+"}, OutputBytes: 1 << 20,
	})
	if err != nil || code != 0 {
		t.Fatalf("list the workspace: %d %v: %s", code, err, errOut)
	}
	entries := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, rest, _ := strings.Cut(line, "|")
		entries[name] = rest
	}
	return entries
}

// A chown of an earlier version's workspace cut short by its bound answers
// unavailable and is taken up again by the next execute, which leaves what
// the first one gave the user as it is (their inodes unchanged) and gives
// the rest: a workspace too large to be given in one run is given by a
// few, never started over.
func TestEarlierWorkspaceOwnerGoesOnWhereItStopped(t *testing.T) {
	t.Parallel()
	e := newEarlierBinding(t, heldChownImage(t, "progress"))
	ctr := e.st.resourceName()
	h := e.provider(t)
	h.p.ownerTimeout = 10 * time.Second
	long := int64(90000)
	r := h.post(e.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ran >> log"}), &long))
	failure(t, r, envapi.CodeUnavailable)
	if st, _, err := h.p.store.get(bindingKey(e.c)); err != nil || st.ChownWhole {
		t.Fatalf("state after the chown was cut short = %+v (%v); want the owner not recorded", st, err)
	}

	// Let the next chown run to its end; only hold's inode changes.
	if code, _, errOut, err := run(t, context.Background(), ctr, execSpec{Argv: []string{"chmod", "600", workspaceDir + "/hold"}, User: "0:0"}); err != nil || code != 0 {
		t.Fatalf("chmod hold: %d %v: %s", code, err, errOut)
	}
	before := workspaceEntries(t, ctr)
	given := 0
	for _, v := range before {
		if strings.HasPrefix(v, "1000:1000|") {
			given++
		}
	}
	if given == 0 || given == len(before) {
		t.Fatalf("%d of the %d entries of the workspace are the user's once the first chown was cut short; want some, not all", given, len(before))
	}

	r = h.post(e.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "cat log 2>/dev/null; echo once"}), &long))
	if out := h.commandOutput(r); out.ExitCode != 0 || out.Stdout != "once\n" {
		t.Errorf("execute after the chown was taken up again = %+v; want its command alone to have run", out)
	}
	after := workspaceEntries(t, ctr)
	changed := 0
	for name, v := range before {
		if strings.HasPrefix(v, "1000:1000|") && after[name] != v {
			changed++
		}
	}
	if changed > 0 {
		t.Errorf("the chown taken up again changed %d of the %d entries the first one had given the user; want none", changed, given)
	}
	for name, v := range after {
		if !strings.HasPrefix(v, "1000:1000|") {
			t.Errorf("%s is %s once the chown was taken up again; want it the user's", name, v)
		}
	}
	if r := h.post(e.c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}

// An image without find (or whose find cannot select by owner) still has
// its /workspace given, whole, to the profile's user: the chown falls
// back to chown -R.
func TestWorkspaceGivenWithoutFind(t *testing.T) {
	t.Parallel()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	img := buildDerivedImage(t, ctx, cli, "brain-docker-test:no-find",
		"RUN mkdir -p /workspace/d/e && touch /workspace/d/e/f && ln -s /bin /workspace/d/link && rm /bin/find\n")
	h := newHarnessWith(t, t.TempDir(), cli, Profiles{DefaultProfileName: {Image: img}})
	c := h.commands()
	h.setup(c, "")
	out := h.shell(c, "stat -c %u:%g . d d/e d/e/f d/link /bin/sh")
	if want := "1000:1000\n1000:1000\n1000:1000\n1000:1000\n1000:1000\n0:0\n"; out.ExitCode != 0 || out.Stdout != want {
		t.Errorf("owners in a workspace of an image without find = %+v; want %q (the link itself, not /bin)", out, want)
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}

// An execute that waits while another one gives an earlier version's
// workspace to the user, and whose deadline passes meanwhile, says that
// its command never started: it did not, and nothing was killed.
func TestDeadlineWhileAnotherExecuteWaitsForTheOwnerSaysNeverStarted(t *testing.T) {
	t.Parallel()
	e := newEarlierBinding(t, heldChownImage(t, "waiting"))
	h := e.provider(t)
	h.p.ownerTimeout = 10 * time.Second
	long := int64(90000)
	first := h.postAsync(e.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ran >> log"}), &long))
	b, err := h.p.lookup(bindingKey(e.c))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		b.mu.Lock()
		owning := b.owning != nil
		b.mu.Unlock()
		if owning {
			break
		}
		if i == 600 {
			t.Fatal("the workspace is never given to the user")
		}
		time.Sleep(50 * time.Millisecond)
	}
	short := int64(300)
	r := h.post(e.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ran >> log"}), &short))
	failure(t, r, envapi.CodeTimeout)
	if !strings.Contains(r.Message, "never started") || strings.Contains(r.Message, "killed") {
		t.Errorf("timeout message = %q; want it to say the command never started", r.Message)
	}
	<-first
}
