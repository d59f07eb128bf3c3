package conformance_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// elsewhere is a callback client for a provider on another host (a CI
// service container, say): the loopback it sees is its own, so a grant
// naming 127.0.0.1 does not reach the suite; the suite's machine is
// reachable only as "suite-host.test".
func elsewhere() *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if host != "suite-host.test" {
			return nil, fmt.Errorf("dial %s: connection refused (this host's own loopback)", addr)
		}
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
	}}}
}

// TestRunCLICallbackHost: a provider that reaches the suite's machine only
// by a name of its own (another container, a CI service) passes the cases
// that call back once --callback-host names that host; a lost
// acknowledgement still reaches it as a connection closed unanswered.
func TestRunCLICallbackHost(t *testing.T) {
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second, MaxBodyBytes: 1 << 20, Client: elsewhere()}
	tg := serveReference(t, newReference, sdk, nil)
	profile := referenceProfile(t)
	run := "exec/finish,exec/lost-finish-ack,reporter/observation"

	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--run", run}, &stdout, &stderr)
	if code != conformance.ExitFail {
		t.Fatalf("without --callback-host: exit %d, want %d (the provider cannot reach 127.0.0.1 of the suite)\n%s%s", code, conformance.ExitFail, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "--callback-host") {
		t.Errorf("a provider that never called back is not pointed at --callback-host:\n%s", stdout.String())
	}

	stdout.Reset()
	stderr.Reset()
	code = conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--run", run, "--callback-host", "suite-host.test"}, &stdout, &stderr)
	if code != conformance.ExitPass {
		t.Fatalf("with --callback-host: exit %d, want %d\n%s%s", code, conformance.ExitPass, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "3 passed, 0 failed") {
		t.Errorf("table:\n%s", stdout.String())
	}

	for _, bad := range []string{"http://suite-host.test", "suite-host.test:8080", "suite-host.test/x"} {
		stdout.Reset()
		stderr.Reset()
		if code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--callback-host", bad}, &stdout, &stderr); code != conformance.ExitUsage || !strings.Contains(stderr.String(), "--callback-host") {
			t.Errorf("--callback-host %q: exit %d, want %d naming the flag\n%s", bad, code, conformance.ExitUsage, stderr.String())
		}
	}
}

// TestTargetCallbackHostChecked: Target.CallbackHost (which TestRemote's
// -conformance.callback-host sets unchecked) that is not a host alone
// would name callback URLs no provider reaches; each case fails at once
// saying what is wrong with it, instead of failing later for a callback
// that never came.
func TestTargetCallbackHostChecked(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"exec/finish"}
	for _, bad := range []string{"127.0.0.1:9", "http://suite-host.test"} {
		report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
			tg := serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, nil)
			tg.CallbackHost = bad
			return tg
		}, &opts)
		if got := report.Failed(); !slices.Equal(got, opts.Run) {
			t.Fatalf("CallbackHost %q: failed %v, want %v\n%s", bad, got, opts.Run, details(report))
		}
		if log := strings.Join(report.Results[0].Log, "\n"); !strings.Contains(log, "CallbackHost") || !strings.Contains(log, "host name or an IP address alone") {
			t.Errorf("CallbackHost %q: the failure does not say what is wrong with it:\n%s", bad, log)
		}
	}
}
