package proctree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// procStat is the part of /proc/<pid>/stat a scan needs.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
	start           uint64 // clock ticks after boot
	flags           uint64 // PF_* of <linux/sched.h>
	// envEnd is the end address of the environment (0 while there is
	// none); hasEnvEnd says the kernel shows it (3.5 and later).
	envEnd    uint64
	hasEnvEnd bool
}

// Process flags (PF_* of <linux/sched.h>).
const (
	pfExiting = 0x00000004
	pfKthread = 0x00200000
)

// procFile reads /proc/<pid>/<name>.
var procFile = func(pid int, name string) ([]byte, error) {
	return os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + name)
}

// readStat parses /proc/<pid>/stat. The command name may hold spaces and
// parentheses, so the fields are read after the last ')'.
func readStat(pid int) (procStat, error) {
	b, err := procFile(pid, "stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: no command end", pid)
	}
	f := bytes.Fields(b[i+2:])
	// f[0]=state f[1]=ppid f[2]=pgrp f[6]=flags ... f[19]=starttime ...
	// f[48]=env_end
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	flags, err3 := strconv.ParseUint(string(f[6]), 10, 64)
	start, err4 := strconv.ParseUint(string(f[19]), 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	s := procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0], start: start, flags: flags}
	if len(f) > 48 {
		if s.envEnd, err = strconv.ParseUint(string(f[48]), 10, 64); err != nil {
			return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
		}
		s.hasEnvEnd = true
	}
	return s, nil
}

func (s procStat) dead() bool { return s.state == 'Z' || s.state == 'X' || s.state == 'x' }

// startingProgram reports whether the process is in execve, between the
// switch to the new program's memory and the setup of its stack: until
// then its environment reads as empty, so its marker cannot be seen. A
// kernel thread or an exiting process has no environment either and is
// starting nothing. (The kernel shows env_end as 0, too, to a reader that
// may not read the process's environment; callers ask only about
// processes whose environment they could read.)
func (s procStat) startingProgram() bool {
	return s.hasEnvEnd && s.envEnd == 0 && s.flags&(pfExiting|pfKthread) == 0 && !s.dead()
}

// hasMarker reports whether the environment of pid holds marker
// ("NAME=value"). Unreadable environments (other owners, zombies) do not.
func hasMarker(pid int, marker []byte) bool {
	b, err := procFile(pid, "environ")
	if err != nil {
		return false
	}
	for len(b) > 0 {
		var kv []byte
		kv, b, _ = bytes.Cut(b, []byte{0})
		if bytes.Equal(kv, marker) {
			return true
		}
	}
	return false
}

// tree identifies the processes of one run.
type tree struct {
	leader int
	start  uint64 // leader start time; older processes are never members
	marker []byte
	self   int
	born   time.Time
	cg     *cgroup // nil without cgroup v2
}

// narrowWindow is how long after the leader's start a scan trusts pid
// order: pids are handed out increasing, wrapping at pid_max, so within a
// short time every process younger than the leader has a pid above it or,
// after a wrap, below the last pid handed out. Older runs read every
// process's start time instead.
const narrowWindow = time.Second

// lastPid is the last pid handed out in this pid namespace.
func lastPid() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(bytes.TrimSpace(b)))
}

// younger reports whether pid may have been handed out after the leader's,
// given the last pid handed out.
func (t *tree) younger(pid, last int) bool {
	if pid == t.leader {
		return true
	}
	if last >= t.leader {
		return pid > t.leader && pid <= last
	}
	return pid > t.leader || pid <= last // wrapped at pid_max
}

// members scans /proc once and returns the live members of the tree.
func (t *tree) members() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	// Read after the listing, so every listed pid is at most last.
	last, lerr := lastPid()
	narrow := lerr == nil && time.Since(t.born) < narrowWindow
	var cand []procStat
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == t.self || pid == 1 || (narrow && !t.younger(pid, last)) {
			continue
		}
		s, err := readStat(pid)
		if err != nil || s.start < t.start {
			continue // gone, or older than the run
		}
		cand = append(cand, s)
	}
	// Once the leader is gone its pid may be handed out again (Linux
	// reuses a pid only when no process group or session still carries
	// it), so a process holding the leader's pid with another start time
	// is a stranger, and so is its group.
	reused := false
	for _, s := range cand {
		if s.pid == t.leader && t.start != 0 && s.start != t.start {
			reused = true
		}
	}
	in := map[int]bool{}
	for _, s := range cand {
		leader := s.pid == t.leader && (t.start == 0 || s.start == t.start)
		group := !reused && s.pgrp == t.leader
		if leader || group || (!s.dead() && hasMarker(s.pid, t.marker)) {
			in[s.pid] = true
		}
	}
	// Close over the parent chain: children of members are members.
	for grew := true; grew; {
		grew = false
		for _, s := range cand {
			if !in[s.pid] && in[s.ppid] {
				in[s.pid] = true
				grew = true
			}
		}
	}
	var live []int
	for _, s := range cand {
		if in[s.pid] && !s.dead() {
			live = append(live, s.pid)
		}
	}
	return live, nil
}

// kill sends SIGKILL to the group and to every member until a scan finds
// none alive or ctx ends. It returns the pids still alive on failure.
func (t *tree) kill(ctx context.Context) error {
	_ = syscall.Kill(-t.leader, syscall.SIGKILL) // the group; ESRCH when empty
	backoff := 200 * time.Microsecond
	quiet, killed := 0, false
	for {
		live, err := t.members()
		if err != nil {
			return err
		}
		if len(live) == 0 {
			// A process caught between fork and exec can be briefly
			// unreadable in /proc: once something was killed, only a
			// second empty scan ends the kill.
			if !killed || quiet > 0 {
				return nil
			}
			quiet++
			time.Sleep(time.Millisecond)
			continue
		}
		quiet, killed = 0, true
		for _, pid := range live {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("kill process %d: %w", pid, err)
			}
		}
		// Killed processes take a moment to become zombies; poll the
		// kernel's view with a short, growing interval.
		if err := pause(ctx, &backoff); err != nil {
			return fmt.Errorf("processes %v still alive: %w", live, err)
		}
	}
}

// pause waits *backoff, then doubles it up to 20 ms, or answers the cause
// of ctx's end.
func pause(ctx context.Context, backoff *time.Duration) error {
	timer := time.NewTimer(*backoff)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timer.C:
	}
	*backoff = min(*backoff*2, 20*time.Millisecond)
	return nil
}

// startTime returns the start time of pid in clock ticks after boot.
func startTime(pid int) (uint64, error) {
	s, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return s.start, nil
}
