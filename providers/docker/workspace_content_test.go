package docker

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// What the image puts in its /workspace belongs to the profile's user once
// the binding's volume holds it, not only the directory itself: a tool
// running as that user can change the files the image gave it, whether
// the image's /workspace is the user's with root's files in it, or root's
// altogether. A symbolic link in it is given to the user itself, never
// what it points to.
func TestImageWorkspaceContentBelongsToTheUser(t *testing.T) {
	t.Parallel()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	img := buildDerivedImage(t, ctx, cli, "brain-docker-test:seeded",
		"RUN mkdir -p /workspace/sub && echo seed > /workspace/seed && ln -s /bin/busybox /workspace/tool && chown 1000:1000 /workspace\n")
	p, err := New(Config{Profiles: Profiles{"default": {Image: img}, "other": {Image: img, User: "1001:1002"}}, StateDir: t.TempDir(), Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	cleanupInstance(t, cli, p.Instance())
	srv := httptest.NewServer(p.Handler(testToken))
	defer srv.Close()
	h := &harness{t: t, p: p, url: srv.URL, brain: envtest.NewBrain(t)}
	for _, tc := range []struct{ profile, user string }{{"", "1000:1000"}, {"other", "1001:1002"}} {
		c := h.commands()
		h.setup(c, tc.profile)
		out := h.shell(c, "echo more >> seed && touch sub/new && stat -c %u:%g . seed sub sub/new && cat seed && stat -L -c %u:%g tool")
		want := tc.user + "\n" + tc.user + "\n" + tc.user + "\n" + tc.user + "\nseed\nmore\n0:0\n"
		if out.ExitCode != 0 || out.Stdout != want {
			t.Errorf("profile %q: the image's files in the workspace = %+v; want them the user's (%q)", tc.profile, out, want)
		}
		if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
			t.Fatalf("teardown = %+v", r)
		}
	}
}

// A binding set up by an earlier version of the provider, which decided
// whether to chown for the workspace's root alone (and so recorded none
// for an image whose /workspace is the user's with root's files in it),
// still gets the image's files as the user's at its first execute.
func TestEarlierBindingStateGivesTheImageFilesToTheUser(t *testing.T) {
	t.Parallel()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	img := buildDerivedImage(t, ctx, cli, "brain-docker-test:seeded-earlier",
		"RUN mkdir -p /workspace/sub && echo seed > /workspace/seed && chown 1000:1000 /workspace\n")
	stateDir := t.TempDir()
	profiles := Profiles{DefaultProfileName: {Image: img}}
	h := newHarnessWith(t, stateDir, cli, profiles)
	c := h.commands()
	h.setup(c, "")
	if err := h.p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	// The file as the earlier version wrote it: the owner decided for
	// the profile's user, and no chown since /workspace itself is the
	// user's.
	path := h.p.store.path(bindingKey(c))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if st["chown_for"] != "1000:1000" || st["phase"] != phaseNew {
		t.Fatalf("state after setup = %s", data)
	}
	delete(st, "chown")
	delete(st, "chown_whole")
	if err := os.WriteFile(path, mustJSON(st), 0o600); err != nil {
		t.Fatal(err)
	}

	h = newHarnessWith(t, stateDir, cli, profiles)
	out := h.shell(c, "echo more >> seed && touch sub/new && stat -c %u:%g seed sub && cat seed")
	if want := "1000:1000\n1000:1000\nseed\nmore\n"; out.ExitCode != 0 || out.Stdout != want {
		t.Errorf("the image's files in the workspace of an earlier binding = %+v; want them the user's (%q)", out, want)
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}
