package journal

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	crashChildEnv = "BRAIN_JOURNAL_CRASH_CHILD_DIR"
	// crashModeEnv "log-only": the child's segment writes never reach the
	// files and no sync point is taken, as if every segment page written
	// since the last sync point were lost; only the commit log has them.
	// "zero-tail": the child runs as usual; after each kill the parent
	// extends every final segment with zeros (see zeroTails).
	crashModeEnv = "BRAIN_JOURNAL_CRASH_MODE"
	// crashRingEnv "1": the child flushes the commit log through io_uring
	// (FlushRing) instead of the default FlushAuto.
	crashRingEnv = "BRAIN_JOURNAL_CRASH_RING"
)

// TestMain lets the test binary run as the crash test's child process.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	if dir := os.Getenv(deleteChildEnv); dir != "" {
		deleteChild(dir)
		return
	}
	if dir := os.Getenv(unbornChildEnv); dir != "" {
		unbornChild(dir)
		return
	}
	os.Exit(m.Run())
}

var crashOpts = &Options{SegmentBytes: 2048}

const crashSessions = 4

type crashData struct {
	S   string `json:"s"`
	N   uint64 `json:"n"`
	Pad string `json:"pad"`
}

// crashChild appends forever from several goroutines and prints
// "<session> <last sequence>" after every acknowledged append.
func crashChild(dir string) {
	opts := *crashOpts
	if os.Getenv(crashRingEnv) == "1" {
		opts.Flush = FlushRing
	}
	logOnly := os.Getenv(crashModeEnv) == "log-only"
	if logOnly {
		opts.SyncPointInterval, opts.CommitLogBytes = time.Hour, 1<<40
	}
	fs, err := OpenFileStore(dir, &opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if logOnly {
		fs.segWriteHook = func([]byte) []byte { return nil }
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range crashSessions {
		wg.Go(func() {
			id := fmt.Sprint("c", w)
			rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(w)))
			for {
				next, err := fs.Next(bg, id)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				rs := make([]Record, 1+rng.IntN(3))
				for i := range rs {
					d, _ := json.Marshal(crashData{S: id, N: next + uint64(i), Pad: strings.Repeat("p", rng.IntN(300))})
					rs[i] = Record{Kind: "crash", Data: d}
				}
				if err := fs.Append(bg, id, next, rs); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				os.Stdout.WriteString(fmt.Sprintf("%s %d\n", id, next+uint64(len(rs))-1))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestCrashKill SIGKILLs a child process that appends in a loop, at random
// points, 200 times in total (4 directories in parallel, two of them
// flushing through io_uring), and checks after each kill that every
// acknowledged record survived.
func TestCrashKill(t *testing.T) {
	const workers = 4
	iterations := 200 / workers
	if testing.Short() {
		iterations = 8
	}
	for w := range workers {
		t.Run(fmt.Sprint("dir", w), func(t *testing.T) {
			t.Parallel()
			crashLoop(t, t.TempDir(), iterations, "", w%2 == 0)
		})
	}
}

// TestCrashKillBeforeSegmentSync SIGKILLs a child whose segment writes are
// all lost (only the commit log reaches the disk) after acknowledgements
// and before any sync point: replay must restore every acknowledged
// record.
func TestCrashKillBeforeSegmentSync(t *testing.T) {
	const workers = 4
	iterations := 40 / workers
	if testing.Short() {
		iterations = 3
	}
	for w := range workers {
		t.Run(fmt.Sprint("dir", w), func(t *testing.T) {
			t.Parallel()
			crashLoop(t, t.TempDir(), iterations, "log-only", w%2 == 0)
		})
	}
}

func crashLoop(t *testing.T, dir string, iterations int, mode string, ring bool) {
	acked := make(map[string]uint64)
	for it := range iterations {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashModeEnv+"="+mode)
		if ring {
			cmd.Env = append(cmd.Env, crashRingEnv+"=1")
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 1 + rand.IntN(12)
		sc := bufio.NewScanner(out)
		lines := 0
		for sc.Scan() {
			id, seq, ok := strings.Cut(sc.Text(), " ")
			n, err := strconv.ParseUint(seq, 10, 64)
			if !ok || err != nil {
				t.Fatalf("iteration %d: bad child line %q", it, sc.Text())
			}
			acked[id] = max(acked[id], n)
			if lines++; lines == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		// Lines still in the pipe after the kill were acknowledged too.
		cmd.Wait()
		if lines < killAfter {
			t.Fatalf("iteration %d: child exited after %d acks: %s", it, lines, stderr.String())
		}
		if mode == "log-only" {
			// The segments lack what the child acknowledged; only the log
			// holds it.
			if logs, _ := filepath.Glob(filepath.Join(dir, commitLogDir, "*.log")); len(logs) == 0 {
				t.Fatalf("iteration %d: no commit log left by the child", it)
			}
			missing := false
			for id, n := range acked {
				missing = missing || segmentRecords(t, filepath.Join(dir, id)) < int(n)
			}
			if !missing {
				t.Fatalf("iteration %d: the segments already hold every acknowledged record before replay", it)
			}
		}
		if mode == "zero-tail" {
			zeroTails(t, dir)
		}
		verifyAfterCrash(t, dir, it, acked)
	}
	torn, _ := filepath.Glob(filepath.Join(dir, "*", "journal", "*.torn-*"))
	segs, _ := filepath.Glob(filepath.Join(dir, "*", "journal", "*.segment"))
	t.Logf("%d kills: %d torn tails cut, %d segments, acknowledged %v", iterations, len(torn), len(segs), acked)
}

// TestCrashKillZeroTail SIGKILLs a child that appends in a loop and then
// leaves each session's final segment as a power loss can on file systems
// that make a file's new size durable before its data: the segment ends
// in zeros where the data of a write that was not acknowledged belonged.
// Every acknowledged record must survive and appends go on.
func TestCrashKillZeroTail(t *testing.T) {
	const workers = 2
	iterations := 40 / workers
	if testing.Short() {
		iterations = 4
	}
	for w := range workers {
		t.Run(fmt.Sprint("dir", w), func(t *testing.T) {
			t.Parallel()
			crashLoop(t, t.TempDir(), iterations, "zero-tail", false)
		})
	}
}

// zeroTails extends the final segment of each session by up to 8 KiB of
// zeros.
func zeroTails(t *testing.T, dir string) {
	t.Helper()
	ids, _ := filepath.Glob(filepath.Join(dir, "c*"))
	for _, sdir := range ids {
		segs, _ := filepath.Glob(filepath.Join(sdir, "journal", "*.segment"))
		if len(segs) == 0 {
			continue
		}
		seg := segs[len(segs)-1] // fixed-width names sort by number
		fi, err := os.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(seg, fi.Size()+1+rand.Int64N(8192)); err != nil {
			t.Fatal(err)
		}
	}
}

// segmentRecords counts the complete frames in the segment files of the
// session directory dir (or of every session when dir is the store's).
func segmentRecords(t *testing.T, dir string) int {
	segs, _ := filepath.Glob(filepath.Join(dir, "journal", "*.segment"))
	more, _ := filepath.Glob(filepath.Join(dir, "*", "journal", "*.segment"))
	segs = append(segs, more...)
	n := 0
	for _, p := range segs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for len(b) > 0 {
			_, size, err := checkFrame(b, DefaultMaxRecordBytes)
			if err != nil {
				break
			}
			n++
			b = b[size:]
		}
	}
	return n
}

// verifyAfterCrash reopens the journal and checks that every acknowledged
// record is there, dense and intact, and that appending continues.
func verifyAfterCrash(t *testing.T, dir string, it int, acked map[string]uint64) {
	t.Helper()
	fs, err := OpenFileStore(dir, crashOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	for w := range crashSessions {
		id := fmt.Sprint("c", w)
		next, err := fs.Next(bg, id)
		if err != nil {
			t.Fatalf("iteration %d: Next(%s) = %v", it, id, err)
		}
		if next <= acked[id] {
			t.Fatalf("iteration %d: %s next is %d but %d was acknowledged", it, id, next, acked[id])
		}
		var count uint64
		after := uint64(0)
		for {
			page, err := fs.Read(bg, id, after, 0, 0)
			if err != nil {
				t.Fatalf("iteration %d: Read(%s, %d) = %v", it, id, after, err)
			}
			if len(page) == 0 {
				break
			}
			for _, r := range page {
				count++
				var d crashData
				if r.Sequence != count || json.Unmarshal(r.Data, &d) != nil || d.N != r.Sequence || d.S != id {
					t.Fatalf("iteration %d: %s record %d = seq %d data %s", it, id, count, r.Sequence, r.Data)
				}
			}
			after = page[len(page)-1].Sequence
		}
		if count != next-1 {
			t.Fatalf("iteration %d: %s holds %d records, Next says %d", it, id, count, next)
		}
	}
	// The next append continues densely (every few iterations, to keep the
	// test fast).
	if it%10 == 0 {
		next, _ := fs.Next(bg, "c0")
		d, _ := json.Marshal(crashData{S: "c0", N: next})
		if err := fs.Append(bg, "c0", next, []Record{{Kind: "crash", Data: d}}); err != nil {
			t.Fatalf("iteration %d: Append after crash = %v", it, err)
		}
		acked["c0"] = next
	}
}
