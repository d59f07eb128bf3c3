package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tourCommands reads the shell commands of README.md's tour of the session
// API: its indented code lines, a line ending in a backslash or inside an
// open quote joined with the next.
func tourCommands(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## A tour of the session API\n")
	if !ok {
		t.Fatal("README.md has no section \"A tour of the session API\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var cmds []string
	var cur strings.Builder
	for line := range strings.SplitSeq(section, "\n") {
		code, ok := strings.CutPrefix(line, "    ")
		if !ok {
			if cur.Len() > 0 {
				t.Fatalf("README.md tour: command left open: %s", cur.String())
			}
			continue
		}
		cur.WriteString(code)
		cur.WriteString("\n")
		if strings.HasSuffix(code, `\`) || strings.Count(cur.String(), "'")%2 == 1 {
			continue
		}
		cmds = append(cmds, strings.TrimSpace(cur.String()))
		cur.Reset()
	}
	return cmds
}

// TestReadmeTour runs README.md's tour of the session API as a newcomer
// would, against brain serve with its defaults (the scripted model and the
// workspace environment), and checks what each command shows.
func TestReadmeTour(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	s := start(t, "")
	cmds := tourCommands(t)
	if len(cmds) < 8 || !strings.HasPrefix(cmds[0], "export BRAIN_TOKEN=<the printed token>;") {
		t.Fatalf("README.md tour is not as expected:\n%s", strings.Join(cmds, "\n---\n"))
	}
	// The tour's first line sets the token and address the server printed;
	// a stream it follows is closed after a while, as a reader's ^C would.
	const marker = "::tour-command::"
	var script strings.Builder
	script.WriteString("set -u\n")
	for i, c := range cmds {
		c = strings.ReplaceAll(c, "<the printed token>", s.Token)
		c = strings.ReplaceAll(c, "http://127.0.0.1:8080", s.URL)
		c = strings.ReplaceAll(c, "curl -sN ", "curl -sN --max-time 3 ")
		if i > 0 {
			script.WriteString("echo; echo " + marker + "\n")
		}
		script.WriteString(c + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	outs := strings.Split(string(out), marker+"\n")
	if len(outs) != len(cmds) {
		t.Fatalf("the tour stopped (%v) after %d of %d commands:\n%s\nstderr: %s", err, len(outs), len(cmds), out, stderr.Bytes())
	}
	outs = outs[1:]
	// The commands after the first, each with what it must show.
	want := []struct {
		prefix string
		shows  *regexp.Regexp
	}{
		{"SID=$(curl", regexp.MustCompile(`^\s*$`)},
		{"curl -s -H \"$A\" -H \"Idempotency-Key: tour-msg-1\"", regexp.MustCompile(`^\{"session_id":"ses_[^"]+","status":"idle","last_sequence":[0-9]+\}\s*$`)},
		{"curl -s -H \"$A\" -H \"Idempotency-Key: tour-msg-2\"", regexp.MustCompile(`^\{"session_id":"ses_[^"]+","status":"idle","last_sequence":[0-9]+\}\s*$`)},
		{"curl -s -H \"$A\" $B/v1/sessions/$SID/transcript", regexp.MustCompile(`(?s)"text":"hello".*"text":"echo: hello".*"name":"sh".*"stdout":"f\\n"`)},
		{"curl -si", regexp.MustCompile(`(?s)^HTTP/1.1 202 .*\r\n\r\n[0-9]+\s*$`)},
		{"curl -sN", regexp.MustCompile(`(?s)event: turn_started\ndata: \{[^\n]*"message":"hello".*"stdout":"f\\n".*event: turn_ended\ndata: [^\n]*"result":"hi"\}\}\n`)},
		{"curl -s -H \"$A\" -H \"Idempotency-Key: tour-end\"", regexp.MustCompile(`"status":"ended"`)},
		{"curl -s -H \"$A\" -H \"Idempotency-Key: tour-del\"", regexp.MustCompile(`^\s*$`)},
		{"curl -s -H \"$A\" $B/v1/models", regexp.MustCompile(`"scripted"`)},
	}
	if len(want) != len(cmds)-1 {
		t.Fatalf("README.md tour has %d commands, the test knows %d:\n%s", len(cmds)-1, len(want), strings.Join(cmds, "\n---\n"))
	}
	for i, w := range want {
		c, o := cmds[i+1], outs[i]
		if !strings.HasPrefix(c, w.prefix) {
			t.Errorf("tour command %d is %q, want one starting %q", i+1, c, w.prefix)
			continue
		}
		if !w.shows.MatchString(o) {
			t.Errorf("tour command %d:\n%s\nshowed:\n%s\nwant it to match %s", i+1, c, o, w.shows)
		}
	}
	if err != nil {
		t.Errorf("the tour's script failed: %v\nstderr: %s", err, stderr.Bytes())
	}
	// The session the tour deleted is gone.
	if m := regexp.MustCompile(`"session_id":"(ses_[^"]+)"`).FindStringSubmatch(outs[6]); m != nil {
		req, err := newRequest(s, "GET", "/v1/sessions/"+m[1], "")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET of the session the tour deleted answered %d, want 404", resp.StatusCode)
		}
	}
	if t.Failed() {
		t.Logf("server log:\n%s", s.stderr)
	}
}
