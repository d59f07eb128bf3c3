package pythonuv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandMessagesNameCommand: what the command writes when it cannot
// start begins with its name, as the other commands' messages do, names
// the flag (or the file) to change and exits 2 for a command line it
// cannot run, 1 for a configuration it cannot serve. A refused command
// line leaves no state directory behind.
func TestCommandMessagesNameCommand(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	plain := "p=" + filepath.Join(root, "plain") + ":echo"
	for _, c := range []struct {
		args  []string
		code  int
		names []string
	}{
		{[]string{"--no-auth"}, 2, []string{"--config", "--project"}},
		{[]string{"--no-auth", "--project", plain, "--max-answer-bytes", "-1"}, 2, []string{"--max-answer-bytes -1"}},
		{[]string{"--no-auth", "--project", plain, "--max-answer-bytes", "5"}, 2, []string{"--max-answer-bytes 5", "1024"}},
		{[]string{"--no-auth", "--project", plain, "stray"}, 2, []string{"unexpected arguments: stray"}},
		{[]string{"--project", plain}, 2, []string{"--token", TokenEnv, "--no-auth"}},
		{[]string{"--project", plain, "--listen", "127.0.0.1:99999", "--no-auth"}, 2, []string{`--listen "127.0.0.1:99999"`}},
		{[]string{"--no-auth", "--config", filepath.Join(root, "missing.json")}, 1, []string{"missing.json"}},
		{[]string{"--no-auth", "--project", "p=" + filepath.Join(root, "nowhere") + ":echo"}, 1, []string{"projects.p.directory"}},
		{[]string{"--no-auth", "--project", "p=" + filepath.Join(root, "plain") + ":-c"}, 1, []string{"projects.p.module"}},
	} {
		t.Setenv(TokenEnv, "")
		state := filepath.Join(t.TempDir(), "state")
		args := append([]string{"--uv", uv, "--listen", "127.0.0.1:0", "--state", state}, c.args...)
		var out, errb bytes.Buffer
		code := Command(t.Context(), args, &out, &errb)
		if code != c.code || !strings.HasPrefix(errb.String(), "brain env python-uv: ") || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and stderr beginning with the command's name", c.args, code, out.String(), errb.String(), c.code)
		}
		for _, n := range c.names {
			if !strings.Contains(errb.String(), n) {
				t.Errorf("%q: stderr %q does not name %s", c.args, errb.String(), n)
			}
		}
		if c.code == 2 {
			if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%q: the state directory was made (%v)", c.args, err)
			}
		}
	}
}

// TestCommandStartLineCountsProjects: the start line counts the projects
// served in words that read right for one project as for several.
func TestCommandStartLineCountsProjects(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	t.Setenv(TokenEnv, "")
	for _, c := range []struct {
		projects []string
		want     string
	}{
		{[]string{"a"}, "(1 project, "},
		{[]string{"a", "b"}, "(2 projects, "},
	} {
		args := []string{"--uv", uv, "--listen", "127.0.0.1:0", "--no-auth"}
		for _, name := range c.projects {
			args = append(args, "--project", name+"="+filepath.Join(root, "plain")+":echo")
		}
		ctx, cancel := context.WithCancel(t.Context())
		outR, outW := io.Pipe()
		exit := make(chan int, 1)
		go func() {
			exit <- Command(ctx, args, outW, io.Discard)
			outW.Close()
		}()
		line, err := bufio.NewReader(outR).ReadString('\n')
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		cancel()
		if code := <-exit; code != 0 || err != nil {
			t.Fatalf("%d projects: exit %d, start line %q (%v)", len(c.projects), code, line, err)
		}
		if !strings.Contains(line, c.want) {
			t.Errorf("start line %q; want it to say %q", line, c.want)
		}
	}
}
