package conformance_test

import (
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// testOptions keep the suite quick on a small machine.
var testOptions = conformance.Options{
	Deadline: 300 * time.Millisecond,
	Grace:    2 * time.Second,
	Timeout:  30 * time.Second,
	Expect:   conformance.CapabilityNames(),
}

// TestReference runs the suite as a Go provider would: the reference
// provider passes every case.
func TestReference(t *testing.T) {
	conformance.Run(t, func(t *testing.T) conformance.Target {
		return serveReference(t, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, nil)
	}, &testOptions)
}
