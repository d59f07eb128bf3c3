package proctree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ReapOrphans kills the processes of runs whose owner is gone: a process
// that used this package and was killed (SIGKILL, a crash) before it could
// stop its runs leaves them running with nobody to enforce their deadlines.
// A run is recognised by its cgroup, where there is one (whichever marker
// its owner used), and by the marker variable markerName (empty:
// DefaultMarker), whose value names the owner ("PID.START.RANDOM", see
// OwnerMark); the runs of owners that still run are never touched. A
// process caught starting a program, whose environment cannot be read
// yet, is looked at again. It returns when none is left and every process
// it killed has exited (an exiting process may still hold files and
// locks), or with an error naming the survivors when ctx ends.
func ReapOrphans(ctx context.Context, markerName string) error {
	if markerName == "" {
		markerName = DefaultMarker
	}
	var errs []error
	if base := cgroupBase(); base != "" && !scanOnly {
		errs = append(errs, reapCgroups(ctx, base))
	}
	errs = append(errs, reapMarked(ctx, []byte(markerName+"=")))
	return errors.Join(errs...)
}

// reapMarked sends SIGKILL to every process whose marker names a gone
// owner, until a scan finds none alive and every process it killed has
// exited.
func reapMarked(ctx context.Context, prefix []byte) error {
	self := os.Getpid()
	backoff := time.Millisecond
	killed := map[int]uint64{} // pid → start time of each process sent SIGKILL
	for {
		d, err := os.Open("/proc")
		if err != nil {
			return fmt.Errorf("scan processes: %w", err)
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return fmt.Errorf("scan processes: %w", err)
		}
		var starting []int
		for _, n := range names {
			pid, err := strconv.Atoi(n)
			if err != nil || pid == self || pid == 1 {
				continue
			}
			env, err := procFile(pid, "environ")
			if err != nil {
				continue // gone, or another user's
			}
			if len(env) == 0 {
				// A process starting a program shows its environment,
				// and maybe a marker, only once the program is set up:
				// look again rather than miss it.
				if s, err := readStat(pid); err == nil && s.startingProgram() {
					starting = append(starting, pid)
				}
				continue
			}
			mark, ok := markerOwner(env, prefix)
			if !ok || !ownerGone(mark) {
				continue
			}
			s, err := readStat(pid)
			if err != nil || s.dead() {
				continue
			}
			killed[pid] = s.start
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("kill process %d: %w", pid, err)
			}
		}
		// A killed process is not gone before it has exited: while it
		// exits, its environment already reads as empty, but it may
		// still hold files and locks.
		var dying []int
		for pid, start := range killed {
			if s, err := readStat(pid); err != nil || s.dead() || s.start != start {
				delete(killed, pid)
			} else {
				dying = append(dying, pid)
			}
		}
		if len(dying) == 0 && len(starting) == 0 {
			return nil
		}
		if err := pause(ctx, &backoff); err != nil {
			if len(dying) == 0 {
				return fmt.Errorf("processes %v were still starting a program, their owner unknown: %w", starting, err)
			}
			return fmt.Errorf("processes %v of a gone owner still alive: %w", dying, err)
		}
	}
}

// markerOwner returns the owner part ("PID.START") of the marker that the
// environment b (NUL-separated, as /proc/<pid>/environ) holds, if any.
func markerOwner(b, prefix []byte) (string, bool) {
	for len(b) > 0 {
		var kv []byte
		kv, b, _ = bytes.Cut(b, []byte{0})
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			// PID.START.RANDOM; a marker without an owner names none.
			parts := strings.Split(string(v), ".")
			if len(parts) != 3 {
				return "", false
			}
			return parts[0] + "." + parts[1], true
		}
	}
	return "", false
}

// ownerGone reports whether the process named by mark ("PID.START", or
// "PID" in cgroup names of earlier versions) has ended: no live process
// has its pid, or the one that has it started at another time. A mark
// that does not parse names no owner that could be gone.
func ownerGone(mark string) bool {
	pidText, startText, hasStart := strings.Cut(mark, ".")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	var start uint64
	if hasStart {
		if start, err = strconv.ParseUint(startText, 10, 64); err != nil {
			return false
		}
	}
	s, err := readStat(pid)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	if s.dead() {
		return true
	}
	return start != 0 && s.start != start
}
