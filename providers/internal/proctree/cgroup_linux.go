package proctree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cgroup is the cgroup v2 a run's leader is started in. Every descendant
// is born in it and cannot leave it without write access to another
// cgroup's cgroup.procs, so one write to cgroup.kill reaches processes
// that left the process group, the parent chain and the environment.
type cgroup struct {
	dir    string
	fd     *os.File // open until the leader has started in it
	killed bool     // cgroup.kill was written: never reused (see remove)
}

// scanOnly turns cgroups off, for the benchmark that compares the two.
var scanOnly bool

// cgroupBase is the directory under which runs get their cgroups: the
// cgroup v2 of this process, when the kernel offers cgroup.kill there and
// the directory is writable; "" otherwise (runs then rely on the scan).
var cgroupBase = sync.OnceValue(func() string {
	base, err := ownCgroupDir()
	if err != nil {
		return ""
	}
	probe := filepath.Join(base, fmt.Sprintf("proctree-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return ""
	}
	defer os.Remove(probe)
	if _, err := os.Stat(filepath.Join(probe, "cgroup.kill")); err != nil {
		return ""
	}
	return base
})

// reapCgroups kills the processes left in the cgroups of runs whose owner
// is gone (a process killed before it could stop its runs) and removes
// those cgroups, with the empty ones such a process kept for reuse.
func reapCgroups(ctx context.Context, base string) error {
	entries, err := os.ReadDir(base)
	if err != nil {
		return fmt.Errorf("read cgroups: %w", err)
	}
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "proctree-")
		i := strings.LastIndexByte(rest, '-')
		if !ok || !e.IsDir() || i <= 0 || !ownerGone(rest[:i]) {
			continue
		}
		c := &cgroup{dir: filepath.Join(base, e.Name()), killed: true}
		if err := c.kill(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// freeCgroups keeps the empty cgroups of finished runs for the next ones:
// creating and removing a cgroup costs more than the run of a short
// command.
var freeCgroups struct {
	sync.Mutex
	dirs []string
	n    int
}

const maxFreeCgroups = 16

// ownCgroupDir finds this process's cgroup v2 directory from
// /proc/self/cgroup ("0::/path") and the cgroup2 mount in
// /proc/self/mountinfo.
func ownCgroupDir() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	rel, found := "", false
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
		}
	}
	if !found {
		return "", errors.New("no cgroup v2 membership")
	}
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		root, mount := f[3], f[4]
		inner, ok := strings.CutPrefix(rel, root)
		if !ok {
			continue // this mount does not show our cgroup
		}
		return filepath.Join(mount, inner), nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no cgroup2 mount shows this process's cgroup")
}

// newCgroup answers an empty cgroup for a run (a free one, else a new
// one), or nil when cgroups are not available to this process.
func newCgroup() *cgroup {
	if scanOnly {
		return nil
	}
	base := cgroupBase()
	if base == "" {
		return nil
	}
	f := &freeCgroups
	f.Lock()
	var dir string
	if n := len(f.dirs); n > 0 {
		dir, f.dirs = f.dirs[n-1], f.dirs[:n-1]
	} else {
		f.n++
		dir = filepath.Join(base, fmt.Sprintf("proctree-%s-%d", OwnerMark(), f.n))
	}
	f.Unlock()
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil
	}
	return &cgroup{dir: dir, fd: fd}
}

// attach makes the leader start inside the cgroup (clone3 with
// CLONE_INTO_CGROUP), so not even its first instruction runs outside.
func (c *cgroup) attach(a *syscall.SysProcAttr) {
	a.UseCgroupFD = true
	a.CgroupFD = int(c.fd.Fd())
}

// started closes the directory handle once the leader runs.
func (c *cgroup) started() {
	if c.fd != nil {
		c.fd.Close()
		c.fd = nil
	}
}

// kill kills every process of the cgroup and waits until it is empty.
// An empty cgroup (the common end of a command) costs one read.
func (c *cgroup) kill(ctx context.Context) error {
	if populated, err := c.populated(); err == nil && !populated && !c.killed {
		return nil
	}
	c.killed = true
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return fmt.Errorf("kill cgroup %s: %w", c.dir, err)
	}
	backoff := 200 * time.Microsecond
	for {
		populated, err := c.populated()
		if err != nil {
			return err
		}
		if !populated {
			return nil
		}
		if err := pause(ctx, &backoff); err != nil {
			return fmt.Errorf("cgroup %s still populated: %w", c.dir, err)
		}
	}
}

// populated reads cgroup.events: "populated 1" while a process of the
// cgroup or of a descendant cgroup is alive.
func (c *cgroup) populated() (bool, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return false, fmt.Errorf("read cgroup %s: %w", c.dir, err)
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("populated ")); ok {
			return string(v) != "0", nil
		}
	}
	return false, fmt.Errorf("read cgroup %s: no populated field", c.dir)
}

// remove deletes the (empty) cgroup, with the cgroups a member created
// below it.
func (c *cgroup) remove() error {
	c.started()
	// An empty cgroup without children is kept for the next run, unless
	// it was killed: some kernels kill every process later started into
	// a cgroup that was once killed (the fork compares the cgroup's kill
	// count with the parent's).
	if populated, err := c.populated(); err == nil && !populated && !c.killed {
		if entries, err := os.ReadDir(c.dir); err == nil && !hasSubdir(entries) {
			f := &freeCgroups
			f.Lock()
			keep := len(f.dirs) < maxFreeCgroups
			if keep {
				f.dirs = append(f.dirs, c.dir)
			}
			f.Unlock()
			if keep {
				return nil
			}
		}
	}
	var dirs []string
	_ = filepath.WalkDir(c.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		var err error
		for range 50 { // an exiting process may hold it for a moment
			if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) || !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}

func hasSubdir(entries []os.DirEntry) bool {
	for _, e := range entries {
		if e.IsDir() {
			return true
		}
	}
	return false
}
