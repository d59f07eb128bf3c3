package pythonuv

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestDefaultTimeoutIsNamed: an execute that carries no deadline is
// bounded by the operator's default timeout; when that passes, the
// timeout names the setting the operator can raise, not a deadline the
// caller never gave.
func TestDefaultTimeoutIsNamed(t *testing.T) {
	r := newRig(t, func(cfg *Config) {
		cfg.Projects["nap"] = Project{Directory: cfg.Projects["plain"].Directory, Module: "nap"}
		cfg.DefaultTimeoutMS = 1500
	})
	s := r.attach("s")
	// The warm-up carries a deadline: preparing the project may take
	// longer than the default timeout under test.
	if rc := r.post(s.Execute(impl("plain"), json.RawMessage(`{}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("warm up: %s", describe(rc))
	}
	start := time.Now()
	rc := r.post(s.Execute(impl("nap"), json.RawMessage(`{"ms":60000}`), nil))
	took := time.Since(start)
	d := wantFailure(t, rc, envapi.CodeTimeout)
	if !strings.Contains(rc.Message, "default_timeout_ms") || strings.Contains(rc.Message, "passed its deadline") {
		t.Fatalf("an execute without a deadline past the default timeout answers %s", describe(rc))
	}
	if d["project"] != "nap" {
		t.Fatalf("details %v", d)
	}
	if took > 30*time.Second {
		t.Fatalf("answered after %s for a default timeout of 1.5 s", took)
	}
}
