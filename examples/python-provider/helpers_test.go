package pythonprovider_test

import (
	"bufio"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envtest"
)

const token = "python-provider-token"

// brainBin is the brain binary TestMain builds, static (CGO_ENABLED=0) so
// that the container image can hold it alone.
var brainBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "python-provider-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	brainBin = filepath.Join(dir, "brain")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", brainBin, "./brain/cmd/brain")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build brain: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// python3 finds the machine's Python; without one the tests skip, unless
// CI is set.
func python3(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 is required in CI but not on PATH: %v", err)
		}
		t.Skip("python3 is not installed")
	}
	return path
}

// startProvider runs script on a free loopback port, with extra flags,
// and returns its URL; the process is killed when the test ends.
func startProvider(t *testing.T, script string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"-u", script, "--listen", "127.0.0.1:0", "--token", token}, extra...)
	cmd := exec.CommandContext(ctx, python3(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Written by the command's copying goroutine while the test reads it.
	stderr := &envtest.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", script, stderr.String())
		}
	})
	lines := make(chan string, 1)
	ended := make(chan struct{}) // stdout closed: the process exited
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				lines <- url
			}
		}
	}()
	select {
	case url := <-lines:
		return url
	case <-ended:
		_ = cmd.Wait()
		t.Fatalf("%s exited before it reported its address; stderr:\n%s", script, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not report its address within 30s; stderr:\n%s", script, stderr.String())
	}
	return ""
}

// brain runs the brain binary and returns its combined output and exit
// status.
func brain(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(brainBin, args...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errorsAs(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("brain %v: %v\n%s", args, err, out)
	return "", -1
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

type junitDoc struct {
	Suites []struct {
		Cases []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// junitResults reads a JUnit report into the failed and skipped case ids
// and the number of cases.
func junitResults(t *testing.T, path string) (failed, skipped []string, total int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read JUnit report: %v", err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(data, &doc); err != nil || len(doc.Suites) != 1 {
		t.Fatalf("JUnit report %v: %s", err, data)
	}
	for _, c := range doc.Suites[0].Cases {
		total++
		switch {
		case c.Failure != nil:
			failed = append(failed, c.Name)
		case c.Skipped != nil:
			skipped = append(skipped, c.Name)
		}
	}
	slices.Sort(failed)
	slices.Sort(skipped)
	return failed, skipped, total
}
