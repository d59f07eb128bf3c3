package conformance

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brain-in-go/brain/internal/progress"
)

// Exit statuses of RunCLI.
const (
	// ExitPass: every selected case passed or was skipped.
	ExitPass = 0
	// ExitFail: at least one case failed, or the run was interrupted.
	ExitFail = 1
	// ExitUsage: the command line or the profile is invalid, it selects
	// no case, or a report could not be written.
	ExitUsage = 2
	// ExitUnreachable: the provider did not answer HTTP at --url, or
	// only a gateway's 502, 503 or 504 did.
	ExitUnreachable = 3
)

// RunCLI implements
//
//	brain conformance --url URL [--token TOKEN] --profile FILE [--junit FILE]
//	    [--run PATTERN,...] [--skip PATTERN,...] [--serial] [--wait DURATION]
//	    [--callback-host HOST]
//	brain conformance --list
//
// It runs the suite against the provider at URL, prints a pass/fail/skip
// table (with the full messages of failed cases) to stdout and optionally
// writes JUnit XML. --run and --skip take case ids, globs ("auth/*") or
// group prefixes ending in "/" ("transport/"). --list prints every case id
// with the capability that gates it ("-" for none) and the rule it checks,
// tab-separated. URL is an absolute http or https URL, with at most a path
// prefix. --callback-host sets Target.CallbackHost. A --junit file that
// cannot be written is found before the run; the report replaces it whole
// once the run ends. The exit status is ExitPass, ExitFail, ExitUsage or
// ExitUnreachable.
func RunCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "base URL of the provider (it serves {url}/v1/operations)")
	token := fs.String("token", "", "bearer token of the provider (default: the profile's)")
	profile := fs.String("profile", "", "JSON profile describing the provider's executes and capabilities")
	junit := fs.String("junit", "", "write JUnit XML to this file")
	run := fs.String("run", "", "comma-separated case ids or patterns to run (default: all)")
	skip := fs.String("skip", "", "comma-separated case ids or patterns to leave out")
	serial := fs.Bool("serial", false, "run the cases one at a time")
	wait := fs.Duration("wait", 10*time.Second, "how long to wait for the provider to answer HTTP before giving up")
	callbackHost := fs.String("callback-host", "", "host name or address at which the provider reaches this machine, when it runs elsewhere (another container, a CI service); the suite's callback endpoints then listen on every interface (default: loopback only)")
	list := fs.Bool("list", false, "list every case id with its gating capability and rule, and exit")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintln(out, "usage: brain conformance --url URL [--token TOKEN] --profile FILE [--junit FILE] [--run PATTERN,...] [--skip PATTERN,...] [--serial] [--wait DURATION] [--callback-host HOST]")
		fmt.Fprintln(out, "       brain conformance --list")
		fs.PrintDefaults()
		fmt.Fprintf(out, "exit status: %d all passed, %d a case failed, %d usage or invalid profile, %d provider unreachable\n",
			ExitPass, ExitFail, ExitUsage, ExitUnreachable)
	}
	// The usage -h asks for goes to stdout with ExitPass; a bad flag's
	// error, and the usage after it, to stderr with ExitUsage.
	var parseOut bytes.Buffer
	fs.SetOutput(&parseOut)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = stdout.Write(parseOut.Bytes())
		return ExitPass
	}
	if err != nil {
		_, _ = stderr.Write(parseOut.Bytes())
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "conformance: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return ExitUsage
	}
	if *list {
		printList(stdout)
		return ExitPass
	}
	if *url == "" || *profile == "" {
		var missing []string
		if *url == "" {
			missing = append(missing, "--url URL (the provider's base URL)")
		}
		if *profile == "" {
			missing = append(missing, "--profile FILE (the provider's JSON profile)")
		}
		fmt.Fprintf(stderr, "conformance: missing %s\n", strings.Join(missing, " and "))
		fs.Usage()
		return ExitUsage
	}
	if err := checkBaseURL(*url); err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	host, err := checkCallbackHost(*callbackHost)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	p, err := LoadProfile(*profile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	tg := p.Target(*url, *token)
	tg.CallbackHost = host
	if *junit != "" {
		// Found out now, not after a run whose report would be lost.
		if err := checkJUnitPath(*junit); err != nil {
			fmt.Fprintln(stderr, err)
			return ExitUsage
		}
	}
	opts := p.RunOptions()
	opts.Serial = opts.Serial || *serial
	opts.Run, opts.Skip = splitList(*run), splitList(*skip)
	for _, patterns := range [][]string{opts.Run, opts.Skip} {
		if err := CheckPatterns(patterns); err != nil {
			fmt.Fprintf(stderr, "%v (see --list)\n", err)
			return ExitUsage
		}
	}
	if len(selected(opts.normalized())) == 0 {
		// A run of nothing would pass whatever the provider does.
		fmt.Fprintf(stderr, "conformance: --skip %s leaves out every case --run %s selects (see --list)\n", *skip, cmpOr(*run, "(all)"))
		return ExitUsage
	}
	if err := Reachable(ctx, tg.Client, *url, *wait); err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUnreachable
	}
	if tg.Token != "" {
		switch authenticatedStatus(ctx, tg.Client, *url, tg.Token) {
		case http.StatusUnauthorized:
			fmt.Fprintf(stderr, "conformance: the provider at %s refused the token (401 to a request that carries it): check --token or the profile's token; the cases run anyway\n", *url)
		case http.StatusNotFound:
			fmt.Fprintf(stderr, "conformance: %s/v1/operations answered 404 to a request with the token: --url is the provider's base URL, without /v1/operations (the suite appends it); the cases run anyway\n", strings.TrimSuffix(*url, "/"))
		}
	}

	// Each case on stderr as it ends; on a terminal a status line shows
	// the cases still running.
	prog := progress.For(stderr, "conformance")
	live := progress.IsTerminal(stderr)
	opts.OnStart = func(id string) {
		if live {
			prog.Report(progress.Event{Subject: id, Step: "case", Status: progress.Started})
		}
	}
	opts.OnResult = func(r Result) {
		fmt.Fprintf(prog, "%-4s  %-36s %8s\n", strings.ToUpper(string(r.Status)), r.ID, r.Duration.Round(time.Millisecond))
		if live {
			prog.Report(progress.Event{Subject: r.ID, Step: "case", Status: progress.Finished, Elapsed: r.Duration})
		}
	}
	report := Check(ctx, func(T) Target { return tg }, opts)
	prog.Done()
	printTable(stdout, report)
	if *junit != "" {
		if err := writeJUnitFile(*junit, report); err != nil {
			fmt.Fprintln(stderr, err)
			return ExitUsage
		}
	}
	if err := context.Cause(ctx); err != nil {
		// An interrupted run checked only part of the provider.
		fmt.Fprintf(stderr, "conformance: the run was interrupted (%v): the cases it did not start are reported skipped, and those it cut short say so\n", err)
		return ExitFail
	}
	if len(report.Failed()) > 0 {
		return ExitFail
	}
	return ExitPass
}

// checkBaseURL reports why raw is not a base URL the suite can post to:
// an absolute http or https URL with a host, and a path prefix at most
// ({url}/v1/operations is appended to it), without query or fragment.
func checkBaseURL(raw string) error {
	u, err := neturl.Parse(raw)
	shown := redactedURL(raw)
	switch {
	case err != nil:
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold a password
		}
		return fmt.Errorf("conformance: --url %q: %w", shown, err)
	case u.User != nil:
		return fmt.Errorf("conformance: --url %q: the URL carries credentials, which would be sent with every command and printed in reports; give the provider's bearer token with --token (or the profile's \"token\") instead", shown)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("conformance: --url %q: want an absolute http:// or https:// URL, such as http://127.0.0.1:8090", shown)
	case u.Host == "" || u.Opaque != "":
		return fmt.Errorf("conformance: --url %q: the URL names no host", shown)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("conformance: --url %q: the provider's base URL takes no query or fragment ({url}/v1/operations is posted to)", shown)
	}
	return nil
}

// redactedURL is raw with the user information of its authority, if it
// has any, replaced by "***", whether or not raw parses as a URL.
func redactedURL(raw string) string {
	rest := raw
	prefix := ""
	if i := strings.Index(raw, "//"); i >= 0 {
		prefix, rest = raw[:i+2], raw[i+2:]
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return raw
	}
	return prefix + "***" + rest[at:]
}

// checkCallbackHost is callbackHost for the --callback-host flag.
func checkCallbackHost(raw string) (string, error) {
	host, err := callbackHost(raw)
	if err != nil {
		return "", fmt.Errorf("conformance: --callback-host %q: %w", raw, err)
	}
	return host, nil
}

// callbackHost returns raw as a host for callback URLs: a host name or an
// IP address (an IPv6 one bracketed or not), without scheme, port or path.
func callbackHost(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(raw, "["), "]")
	if ip := net.ParseIP(host); ip != nil {
		return host, nil
	}
	if _, _, err := net.SplitHostPort(raw); err == nil || strings.ContainsAny(host, "/:@?# ") {
		return "", errors.New("want a host name or an IP address alone, such as 172.17.0.1 (each case's callback endpoint listens on a port of its own)")
	}
	return host, nil
}

// Reachable waits up to wait for url to answer any HTTP response to a POST
// of {url}/v1/operations without a token, other than 502, 503 or 504 (a
// gateway's answer while the provider behind it is not up). It returns an
// error naming the last failure when it never does, and at once when the
// provider's certificate is not trusted, which waiting does not change.
func Reachable(ctx context.Context, client *http.Client, url string, wait time.Duration) error {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, max(wait, time.Second))
	defer cancel()
	target := strings.TrimSuffix(url, "/") + "/v1/operations"
	var last error // why the latest attempt that ended before the wait did failed
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader("{}"))
		if err != nil {
			return fmt.Errorf("conformance: provider URL %q: %w", url, err)
		}
		res, err := client.Do(req)
		if err != nil && ctx.Err() != nil && last != nil {
			// The wait ended while an attempt was under way: the one
			// before it says why the provider was not reached.
			err = last
		}
		var untrusted *tls.CertificateVerificationError
		if errors.As(err, &untrusted) {
			return fmt.Errorf("conformance: the provider at %s answered with a certificate this machine does not trust: %w", url, err)
		}
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
			res.Body.Close()
			switch res.StatusCode {
			case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
				// A proxy or load balancer in front of a provider that
				// is not up yet: wait on.
				err = fmt.Errorf("answered %d, as a gateway does while nothing behind it answers", res.StatusCode)
			default:
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("conformance: the provider at %s could not be reached within %v: %w", url, wait, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// authenticatedStatus is the status the provider answers a malformed
// command that carries token: 401 when it refuses the token, 404 when
// nothing is served at {url}/v1/operations, 400 for one that takes the
// token and refuses the command for its body; 0 when it does not answer.
func authenticatedStatus(ctx context.Context, client *http.Client, url, token string) int {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+"/v1/operations", strings.NewReader("{}"))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	res.Body.Close()
	return res.StatusCode
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func printList(w io.Writer) {
	for _, c := range Cases() {
		capability := c.Capability
		if capability == "" {
			capability = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", c.ID, capability, c.Rule)
	}
}

func printTable(w io.Writer, r Report) {
	fmt.Fprintf(w, "%-4s  %-36s %8s  %s\n", "", "CASE", "TIME", "DETAIL")
	fmt.Fprint(w, Summary(r.Results))
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", len(r.Passed()), len(r.Failed()), len(r.Skipped()))
	for _, res := range r.Results {
		if res.Status == Fail {
			fmt.Fprintf(w, "\n--- FAIL %s\n    %s\n", res.ID, strings.ReplaceAll(strings.Join(res.Log, "\n"), "\n", "\n    "))
		}
	}
}

// checkJUnitPath reports why a report could not be written at path: its
// directory is missing or not writable, or path is a directory.
func checkJUnitPath(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("conformance: --junit %s: is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("conformance: --junit %s: the report could not be written: %w", path, err)
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return nil
}

// writeJUnitFile writes the report to a file of its own beside path and
// renames it over path, so that path holds either the whole earlier file
// or the whole report, never a part of one.
func writeJUnitFile(path string, r Report) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("conformance: --junit %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := WriteJUnit(f, r); err != nil {
		return err
	}
	// CreateTemp makes the file readable by its owner alone; a report is
	// read by whoever collects it.
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("conformance: --junit %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("conformance: --junit %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("conformance: --junit %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("conformance: --junit %s: %w", path, err)
	}
	return nil
}
