package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/catalog"
)

// TestModelsMalformedQuery: a provider filter the server cannot read is
// refused, as the events route refuses a cursor it cannot read, instead
// of being dropped and answered with the whole catalogue.
func TestModelsMalformedQuery(t *testing.T) {
	c, _ := catalog.New(nil)
	f := newFixture(t, Options{Models: c})
	for _, q := range []string{"provider=%zz", "provider=anthropic;x", "provider=anthropic&%zz", "provider=%61nthropic%"} {
		st, _, b := f.do("GET", "/v1/models?"+q, "")
		var e struct {
			Code string `json:"code"`
		}
		json.Unmarshal(b, &e)
		if st != 400 || e.Code != "invalid_request" {
			t.Errorf("GET /v1/models?%s = %d %.200s, want 400 invalid_request", q, st, b)
		}
	}
	// A well-formed query still filters.
	if st, _, b := f.do("GET", "/v1/models?provider=%61nthropic", ""); st != 200 {
		t.Errorf("GET /v1/models?provider=%%61nthropic = %d %s, want 200", st, b)
	}
}
