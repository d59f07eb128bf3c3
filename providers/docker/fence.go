package docker

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"
)

// fenceName is the file in the state directory whose byte-range locks
// tell the processes on the directory (the provider serving it, the gc
// command) which bindings are in use. The state store skips it (its name
// starts with a dot).
const fenceName = ".bindings.lock"

// errFenceBusy reports a binding another holder has in use.
var errFenceBusy = errors.New("the binding is in use")

// fence is an advisory lock per binding, shared between processes: a
// provider holds a binding's lock shared while an operation or an
// allocation uses its resources, and GC holds it exclusively while it
// removes them. The marks a provider keeps in memory (collect) cannot
// tell a gc command in another process that an execute runs, nor tell
// the provider that the gc command removes a binding's resources; the
// lock does both. Each binding is one byte of the file, at an offset
// taken from a digest of its key (two keys sharing a byte only make one
// wait for the other; where only the whole file can be locked, all keys
// share it). Every hold opens the file anew, so that holds of one process
// are as independent as those of two (see lockRange).
type fence struct {
	path string
	log  *slog.Logger
	// poll is how often share asks again while GC holds the lock.
	poll time.Duration
	// warned: share said once that it cannot lock.
	warned sync.Once
}

func newFence(dir string, log *slog.Logger) *fence {
	return &fence{path: filepath.Join(dir, fenceName), log: log, poll: 20 * time.Millisecond}
}

// fenceOffset is the byte of key's lock.
func fenceOffset(key string) int64 {
	sum := sha256.Sum256([]byte(key))
	return int64(binary.BigEndian.Uint64(sum[:8]) >> 2)
}

// share holds key's lock shared until release is called, waiting while
// a GC holds it. A lock the file system cannot give is logged (once) and
// not held: the provider serves on, with the marks of its own process
// only.
func (f *fence) share(ctx context.Context, key string) (release func(), err error) {
	for {
		release, err := lockRange(f.path, fenceOffset(key), false)
		switch {
		case err == nil:
			return release, nil
		case !errors.Is(err, errFenceBusy):
			f.warned.Do(func() {
				f.log.Warn("bindings are not locked against a gc in another process", "error", err)
			})
			return func() {}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the gc of %s in another process: %w", key, ctx.Err())
		case <-time.After(f.poll):
		}
	}
}

// claim holds key's lock exclusively until release is called, without
// waiting: it answers errFenceBusy while the binding is in use.
func (f *fence) claim(key string) (release func(), err error) {
	release, err = lockRange(f.path, fenceOffset(key), true)
	if err != nil && !errors.Is(err, errFenceBusy) {
		return nil, fmt.Errorf("docker: gc: lock binding %s: %w (its resources are left)", key, err)
	}
	return release, err
}

// servingName is the file in the state directory whose lock the provider
// serving the directory (Command) holds as long as it serves.
const servingName = ".serving.lock"

// ErrStateInUse reports a state directory that another provider serves.
var ErrStateInUse = errors.New("docker: the state directory is served by another provider")

// lockServing takes the serving lock of the state directory dir without
// waiting, and holds it until release is called or the process ends: a
// second provider serving the directory would kill, at its start, the
// commands the first runs (KillLeftovers) and keep the same bindings in
// two memories. A directory another provider holds is ErrStateInUse.
func lockServing(dir string) (release func(), err error) {
	release, err = lockRange(filepath.Join(dir, servingName), 0, true)
	if errors.Is(err, errFenceBusy) {
		return nil, fmt.Errorf("%w: %s (%s is locked); stop that provider first", ErrStateInUse, dir, servingName)
	}
	if err != nil {
		return nil, fmt.Errorf("docker: lock the state directory %s: %w", dir, err)
	}
	return release, nil
}
