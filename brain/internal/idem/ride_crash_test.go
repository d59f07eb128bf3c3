package idem

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// The riding workload of TestRidingCompactionSurvivesKill: request i is
// made at ridingBase + i ms, answers ridingBody(i), and every
// ridingBatch requests the journal's sync point calls SyncJournaled.
const (
	ridingChildEnv   = "IDEM_RIDING_CRASH_CHILD"
	ridingBatch      = 25
	ridingRetention  = 200 * time.Millisecond
	ridingBaseMs     = 1_000_000
	ridingDurablePfx = "durable "
)

func ridingKey(i int) string { return "k" + strconv.Itoa(i) }

func ridingBody(i int) string {
	return strconv.Itoa(i) + strings.Repeat("b", 1000)
}

// runRidingChild rides requests until it is killed: after each sync
// point it prints the last request it made durable and waits for a line
// on stdin before it goes on.
func runRidingChild(path string) {
	var i int
	now := func() time.Time { return time.UnixMilli(ridingBaseMs + int64(i)) }
	s, err := Open(path, &Options{Retention: ridingRetention, Now: now})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	in := bufio.NewReader(os.Stdin)
	for ; ; i++ {
		key := ridingKey(i)
		c, _, err := s.ClaimRiding(context.Background(), "send_message", key, Digest([]byte(key)), answerAll, nil)
		if err == nil {
			err = s.Journaled(commits.ClaimKind, c.Ride().Claim)
		}
		if err == nil {
			err = s.Journaled(commits.AnswerKind, c.Ride().Answer(ridingBody(i), nil))
		}
		if err == nil {
			rec, _ := c.Recorded()
			err = c.Answer(rec.Status, rec.Body)
		}
		if err == nil && (i+1)%ridingBatch == 0 {
			err = s.SyncJournaled()
			fmt.Printf("%s%d\n", ridingDurablePfx, i)
			if _, rerr := in.ReadString('\n'); rerr != nil {
				os.Exit(0)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// A process whose requests ride the journal compacts requests.log at
// its sync points; killed at any moment, mid-compaction included, it
// leaves a file that opens and answers every request its last completed
// sync point made durable (and the retention keeps).
func TestRidingCompactionSurvivesKill(t *testing.T) {
	if path := os.Getenv(ridingChildEnv); path != "" {
		runRidingChild(path)
		return
	}
	if testing.Short() {
		t.Skip("kills child processes")
	}
	temps := 0
	for round := range 8 {
		path := filepath.Join(t.TempDir(), "requests.log")
		last := killRidingChild(t, path, 20+rand.IntN(40))
		dir, _ := os.ReadDir(filepath.Dir(path))
		if len(dir) > 1 {
			temps++ // killed while a compaction's temporary file existed
		}
		opts := &Options{Retention: ridingRetention, Now: func() time.Time { return time.UnixMilli(ridingBaseMs + int64(last)) }}
		s, err := Open(path, opts)
		if err != nil {
			t.Fatalf("round %d: Open after the kill = %v", round, err)
		}
		// The child's clock ran at most one batch past last, so the
		// retention keeps every answer of the last 150 ms.
		for i := max(0, last-150); i <= last; i++ {
			key := ridingKey(i)
			_, a, err := s.Claim(context.Background(), "send_message", key, Digest([]byte(key)))
			if err != nil || a == nil || !bytes.Equal(a.Body, []byte(ridingBody(i))) {
				t.Fatalf("round %d: request %d (durable up to %d) after the kill = answer %v, %v; want its answer", round, i, last, a != nil, err)
			}
		}
		s.Close()
	}
	t.Logf("%d of 8 kills left a compaction's temporary file", temps)
}

// killRidingChild runs the riding workload on path in a child process
// for at least batches sync points, until the file is about to reach
// the compaction threshold, lets it run on into the next batch (whose
// sync point compacts) for a random moment, kills it, and answers the
// last request the completed sync points made durable.
func killRidingChild(t *testing.T, path string, batches int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRidingCompactionSurvivesKill$")
	cmd.Env = append(os.Environ(), ridingChildEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A batch of requests adds about this many bytes to the file.
	const batchBytes = ridingBatch * 1115
	lines := bufio.NewScanner(stdout)
	last := -1
	for n := 0; ; {
		if !lines.Scan() {
			cmd.Wait()
			t.Fatalf("child ended after %d sync points: %s", n, stderr.String())
		}
		l, ok := strings.CutPrefix(lines.Text(), ridingDurablePfx)
		if !ok {
			continue
		}
		if last, err = strconv.Atoi(l); err != nil {
			t.Fatal(err)
		}
		n++
		if _, err := stdin.Write([]byte("\n")); err != nil {
			t.Fatal(err)
		}
		if n >= batches && fileSize(t, path)+batchBytes >= compactMinBytes {
			break
		}
	}
	time.Sleep(rand.N(10 * time.Millisecond))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	return last
}
