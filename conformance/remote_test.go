package conformance_test

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

var (
	remoteURL          = flag.String("conformance.url", "", "base URL of a provider to run the suite against (TestRemote)")
	remoteToken        = flag.String("conformance.token", "", "bearer token of that provider (default: the profile's)")
	remoteCallbackHost = flag.String("conformance.callback-host", "", "host name or address at which that provider reaches this machine, when it runs elsewhere (Target.CallbackHost)")
	remoteProfile      = flag.String("conformance.profile", "", "JSON profile describing that provider (see the package documentation); a relative path is read from the directory go test was run in (on Linux; elsewhere give an absolute path)")
)

// TestRemote runs the suite against a provider in any language:
//
//	go test github.com/brain-in-go/brain/conformance -run TestRemote -args \
//	    -conformance.url=http://127.0.0.1:8090 -conformance.profile=profile.json
func TestRemote(t *testing.T) {
	if *remoteURL == "" {
		t.Skip("set -conformance.url (and -conformance.profile) to run the suite against a provider")
	}
	if *remoteProfile == "" {
		t.Fatal("-conformance.profile is required with -conformance.url")
	}
	p, err := conformance.LoadProfile(profilePath(*remoteProfile))
	if err != nil {
		t.Fatal(err)
	}
	tg := p.Target(*remoteURL, *remoteToken)
	tg.CallbackHost = *remoteCallbackHost
	conformance.Run(t, func(*testing.T) conformance.Target { return tg }, p.RunOptions())
}

// profilePath resolves a relative profile path from the caller's
// directory. go test runs the test binary in the package's directory, so
// the caller's is the working directory of the parent go command; a binary
// run by hand (conformance.test) has the shell as its parent, whose working
// directory is its own.
func profilePath(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	if dir, ok := callerDir(); ok {
		return filepath.Join(dir, path)
	}
	return path
}

func callerDir() (string, bool) {
	if runtime.GOOS != "linux" {
		return "", false
	}
	dir, err := os.Readlink("/proc/" + strconv.Itoa(os.Getppid()) + "/cwd")
	return dir, err == nil && filepath.IsAbs(dir)
}
