package pythonuv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

func sh(script string) procSpec {
	return procSpec{Path: "/bin/sh", Args: []string{"-c", script}, StdoutLimit: 1 << 20, StderrKeep: 1 << 10}
}

func TestRunProcessKillsLeftoverChildren(t *testing.T) {
	// The leader exits at once and leaves a background child behind that
	// holds no pipe (so only the group kill can end it).
	res, err := runProcess(context.Background(), sh(`sleep 600 >/dev/null 2>&1 </dev/null & echo $!`))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stopped || res.CleanupErr != nil {
		t.Fatalf("result %+v", res)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	if err != nil {
		t.Fatalf("stdout %q: %v", res.Stdout, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := waitGone(ctx, pid); err != nil {
		t.Fatalf("background child %d survived its invocation: %v", pid, err)
	}
}

func TestRunProcessStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// The child holds stdout: the answer must not wait for it.
	start := time.Now()
	res, err := runProcess(ctx, sh(`sleep 600 & sleep 600`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.Signal != "killed" || res.ExitCode != -1 {
		t.Fatalf("result %+v", res)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("stopping took %s", took)
	}
}

func TestRunProcessBoundsOutput(t *testing.T) {
	spec := sh(`head -c 5000 /dev/zero | tr '\0' x; echo done >&2; sleep 600`)
	spec.StdoutLimit = 100
	spec.StderrKeep = 3
	res, err := runProcess(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.StdoutOverflow || len(res.Stdout) != 100 || res.Stopped {
		t.Fatalf("overflow %v, %d bytes kept, stopped %v", res.StdoutOverflow, len(res.Stdout), res.Stopped)
	}

	spec = sh(`cat; printf 'first line\nsecond line\n' >&2; exit 7`)
	spec.Stdin = []byte(`{"x":1}`)
	spec.StderrKeep = 14
	res, err = runProcess(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != `{"x":1}` || res.ExitCode != 7 || res.Stderr != "second line\n" || !res.StderrTruncated {
		t.Fatalf("result %+v", res)
	}
}

func TestRunProcessKillsProcessesThatLeftTheGroup(t *testing.T) {
	// A process that leaves the group (setsid) and keeps stdout open is
	// still part of the run: it is killed once the leader exits, and the
	// invocation does not wait for it.
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := `setsid sh -c 'echo $$ > ` + pidFile + `.tmp; mv ` + pidFile + `.tmp ` + pidFile + `; exec sleep 30' &
while [ ! -s ` + pidFile + ` ]; do sleep 0.01; done`
	res, err := runProcess(context.Background(), sh(script))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file %q: %v", data, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if res.ExitCode != 0 || res.CleanupErr != nil {
		t.Fatalf("result %+v", res)
	}
	if res.Elapsed > drainGrace {
		t.Fatalf("took %s", res.Elapsed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := waitGone(ctx, pid); err != nil {
		t.Fatalf("process %d, which left the group, survived the run: %v", pid, err)
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{keep: 4}
	for _, s := range []string{"ab", "cdef", "g", "", "hijklmnop"} {
		_, _ = tb.Write([]byte(s))
	}
	if got, truncated := tb.tail(); got != "mnop" || !truncated {
		t.Fatalf("tail %q truncated %v", got, truncated)
	}
	// The newline ending the last line is no line boundary to start at.
	tb = &tailBuffer{keep: 10}
	_, _ = tb.Write([]byte("Traceback\nValueError: bad input\n"))
	if got, truncated := tb.tail(); got != "bad input\n" || !truncated {
		t.Fatalf("tail %q truncated %v; want the end of the last line", got, truncated)
	}
	var big bytes.Buffer
	tb = &tailBuffer{keep: 1000}
	for i := range 10000 {
		big.WriteString(strconv.Itoa(i) + "\n")
		_, _ = tb.Write([]byte(strconv.Itoa(i) + "\n"))
	}
	if !strings.HasSuffix(big.String(), tb.String()) || !strings.HasPrefix(tb.String(), "9") || len(tb.String()) > 1000 {
		t.Fatalf("tail %q", tb.String())
	}
}

// TestTailBufferBoundsReplacedBytes: bytes that are not UTF-8 are
// reported as U+FFFD, three bytes; the tail reported stays within its
// bound all the same, and says that it was cut.
func TestTailBufferBoundsReplacedBytes(t *testing.T) {
	for _, in := range []string{strings.Repeat("\xffa", 6), strings.Repeat("\xffa", 100), "x\n" + strings.Repeat("\xc3a", 5)} {
		tb := &tailBuffer{keep: 12}
		_, _ = tb.Write([]byte(in))
		got, truncated := tb.tail()
		if len(got) > 12 || !utf8.ValidString(got) || !truncated || !strings.HasSuffix(got, "\uFFFDa") {
			t.Errorf("tail of %q: %q (%d bytes), truncated %v; want at most 12 bytes of UTF-8 ending in U+FFFD a, truncated", in, got, len(got), truncated)
		}
	}
	tb := &tailBuffer{keep: 12}
	_, _ = tb.Write([]byte("abc\xffdef"))
	if got, truncated := tb.tail(); got != "abc\uFFFDdef" || truncated {
		t.Errorf("tail %q, truncated %v; want the whole of it", got, truncated)
	}
}

func TestChildEnv(t *testing.T) {
	parent := []string{"PATH=/bin", "SECRET=x", "UV_INDEX_URL=u", "MYAPP_A=1", "MYAPP_B=2", "UV_PYTHON_DOWNLOADS=automatic", "HOME=/root", "broken"}
	got := childEnv(parent, append(append([]string(nil), DefaultEnvAllow...), "MYAPP_*"), map[string]string{"UV_PYTHON": "3.11", "UV_CACHE_DIR": ""})
	want := "PATH=/bin UV_INDEX_URL=u MYAPP_A=1 MYAPP_B=2 HOME=/root UV_PYTHON=3.11 NO_COLOR=1 UV_NO_PROGRESS=1 UV_PYTHON_DOWNLOADS=never"
	if strings.Join(got, " ") != want {
		t.Fatalf("env\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}
