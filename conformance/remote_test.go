package conformance_test

import (
	"flag"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

var (
	remoteURL     = flag.String("conformance.url", "", "base URL of a provider to run the suite against (TestRemote)")
	remoteToken   = flag.String("conformance.token", "", "bearer token of that provider (default: the profile's)")
	remoteProfile = flag.String("conformance.profile", "", "JSON profile describing that provider (see the package documentation)")
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
	p, err := conformance.LoadProfile(*remoteProfile)
	if err != nil {
		t.Fatal(err)
	}
	tg := p.Target(*remoteURL, *remoteToken)
	conformance.Run(t, func(*testing.T) conformance.Target { return tg }, p.RunOptions())
}
