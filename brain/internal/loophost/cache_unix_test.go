//go:build unix

package loophost_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/internal/pipetest"
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

// A named pipe in the agentloops directory, named as a stored module or
// as a remembered rejection, does not hold Open (and the server's start)
// for ever: the module it names answers rejected, saying its stored file
// is not a regular file, until its bytes are admitted again, which
// replaces the pipe; the note is ignored, as a damaged one is.
func TestStoredFilesThatArePipesDoNotHoldOpen(t *testing.T) {
	answer := `{"result":{"turns":1}}`
	loop := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(answer))), data: [][]byte{active(0, answer)}}
	b := loop.bytes()
	sum := sha256.Sum256(b)
	id := hex.EncodeToString(sum[:])
	dir := t.TempDir()
	fifo := filepath.Join(dir, id+".wasm")
	pipetest.Make(t, fifo)
	note := filepath.Join(dir, strings.Repeat("ab", 32)+".rejected")
	pipetest.Make(t, note)
	type opened struct {
		h   *loophost.Host
		err error
	}
	o := pipetest.Within(t, note, 20*time.Second, func() opened {
		return pipetest.Within(t, fifo, 20*time.Second, func() opened {
			h, err := loophost.Open(context.Background(), loophost.Options{Dir: dir, CacheDir: t.TempDir()})
			return opened{h, err}
		})
	})
	if o.err != nil {
		t.Fatalf("Open with named pipes among the stored modules = %v", o.err)
	}
	h := o.h
	defer h.Close(context.Background())
	a, ok, err := h.Find(context.Background(), id)
	if err != nil || !ok || a.Status != loophost.StatusRejected || !strings.Contains(a.Error.Message, "not a regular file") {
		t.Fatalf("GET of a module stored as a named pipe = %+v %v %v, want rejected, saying so", a, ok, err)
	}
	if got := admit(t, h, b); got != id {
		t.Fatalf("admitted %s, want %s", got, id)
	}
	if r, err := run(t, h, id, newFake(), "hi"); err != nil || r["turns"] != 1.0 {
		t.Fatalf("turn of the module admitted again = %v %v", r, err)
	}
	if stored, err := os.ReadFile(fifo); err != nil || string(stored) != string(b) {
		t.Fatalf("the named pipe was not replaced by the module: %v", err)
	}
}
