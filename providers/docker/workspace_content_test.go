package docker

import (
	"context"
	"net/http/httptest"
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
