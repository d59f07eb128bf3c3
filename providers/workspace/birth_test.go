package workspace

import (
	"testing"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A workspace allocated where its creation time was recorded, checked
// where none can be read (a kernel or a sandbox without statx), is
// identified without it (by its mark, or its inode): it is not taken for
// one replaced, which would leave it lost until a reset dropped its files.
func TestUnreadableBirthTimeIsNoLoss(t *testing.T) {
	f := newFixture(t, Options{})
	c, rec := allocated(t, f)
	if rec.Birth == 0 {
		t.Skip("the file system under the test's root records no creation time")
	}
	readBirth = func(string) int64 { return 0 }
	t.Cleanup(func() { readBirth = birthTime })
	g := f.restart(Options{})
	var rd toolset.ReadOutput
	ok(t, g.exec(c, "read", map[string]string{"path": "a"}, nil), &rd)
	if rd.Content != "kept" {
		t.Errorf("read %+v", rd)
	}
	var in InspectOutput
	ok(t, g.post(c.Call("inspect", nil)), &in)
	if !in.Allocated || in.Phase != phaseReady {
		t.Errorf("inspect %+v, want the workspace allocated", in)
	}
}
