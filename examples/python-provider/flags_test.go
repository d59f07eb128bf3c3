package pythonprovider_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFlagsRefused: a --listen that is no host:port, or a bound below 1,
// is refused with a line naming the flag and exit status 2, as argparse
// refuses any other command line; an address that cannot be bound exits
// 1 naming it. None of them prints a Python traceback.
func TestFlagsRefused(t *testing.T) {
	py := python3(t)
	for _, c := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"--listen", "8090"}, 2, "argument --listen: '8090': want host:port"},
		{[]string{"--listen", "127.0.0.1:http"}, 2, "argument --listen: '127.0.0.1:http': want host:port"},
		{[]string{"--listen", "127.0.0.1:70000"}, 2, "with a port from 0 to 65535"},
		{[]string{"--listen", "::1:8090"}, 2, "write an IPv6 address in brackets"},
		{[]string{"--max-body-bytes", "0"}, 2, "argument --max-body-bytes: 0: want at least 1"},
		{[]string{"--max-remembered", "-1"}, 2, "argument --max-remembered: -1: want at least 1"},
		{[]string{"--listen", "192.0.2.1:0"}, 1, "cannot listen on 192.0.2.1:0"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, py, append([]string{"provider.py", "--token", token}, c.args...)...)
		out, err := cmd.CombinedOutput()
		cancel()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(string(out), c.say) || strings.Contains(string(out), "Traceback") {
			t.Errorf("provider.py %v: exit %d, output:\n%s\nwant exit %d saying %q", c.args, code, out, c.code, c.say)
		}
	}
}

// TestListenIPv6: an IPv6 loopback address in brackets is served, and the
// address printed is a URL that reaches it.
func TestListenIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	ln.Close()
	url := startProvider(t, "provider.py", "--listen", "[::1]:0") // the last --listen counts
	if !strings.HasPrefix(url, "http://[::1]:") {
		t.Fatalf("listening on %q", url)
	}
	resp, err := http.Post(url+"/v1/operations", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an operation without the token answered %d, want 401", resp.StatusCode)
	}
}
