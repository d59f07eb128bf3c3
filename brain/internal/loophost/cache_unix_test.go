//go:build unix

package loophost_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// A compilation cache entry that is not a regular file (a named pipe,
// which no one writes, say) does not hold the host: Open removes it,
// compiles the stored module anew and the module runs.
func TestCacheEntryThatIsNotAFileDoesNotHoldOpen(t *testing.T) {
	answer := `{"result":{"turns":1}}`
	loop := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(answer))), data: [][]byte{active(0, answer)}}
	dir, cache := t.TempDir(), t.TempDir()
	h := openHost(t, loophost.Options{Dir: dir, CacheDir: cache})
	id := admit(t, h, loop.bytes())
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var pipes int
	err := filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		pipes++
		return syscall.Mkfifo(p, 0o600)
	})
	if err != nil || pipes == 0 {
		t.Fatalf("replacing the cache entries: %d, %v", pipes, err)
	}

	opened := make(chan *loophost.Host, 1)
	go func() {
		h2, err := loophost.Open(context.Background(), loophost.Options{Dir: dir, CacheDir: cache})
		if err != nil {
			t.Error(err)
		}
		opened <- h2
	}()
	var h2 *loophost.Host
	select {
	case h2 = <-opened:
	case <-time.After(time.Minute):
		t.Fatal("Open is held by a named pipe in the compilation cache")
	}
	if h2 == nil {
		return
	}
	defer h2.Close(context.Background())
	if r, err := run(t, h2, id, newFake(), "hi"); err != nil || r["turns"] != 1.0 {
		t.Fatalf("turn = %v %v", r, err)
	}
}
