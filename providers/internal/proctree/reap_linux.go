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
// OwnerMark); the runs of owners that still run are never touched. It returns when
// none is left, or with an error naming the survivors when ctx ends.
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
// owner, until a scan finds none alive.
func reapMarked(ctx context.Context, prefix []byte) error {
	self := os.Getpid()
	backoff := time.Millisecond
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
		var live []int
		for _, n := range names {
			pid, err := strconv.Atoi(n)
			if err != nil || pid == self || pid == 1 {
				continue
			}
			mark, ok := markerOwner(pid, prefix)
			if !ok || !ownerGone(mark) {
				continue
			}
			if s, err := readStat(pid); err != nil || s.dead() {
				continue
			}
			live = append(live, pid)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("kill process %d: %w", pid, err)
			}
		}
		if len(live) == 0 {
			return nil
		}
		if err := pause(ctx, &backoff); err != nil {
			return fmt.Errorf("processes %v of a gone owner still alive: %w", live, err)
		}
	}
}

// markerOwner returns the owner part ("PID.START") of the marker that the
// environment of pid holds, if any.
func markerOwner(pid int, prefix []byte) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
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
