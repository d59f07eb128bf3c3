package conformance

import (
	"encoding/json"
	"net/http"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// transportRefusedNoEffect sends setups the provider must refuse 400 or
// 404, each of a binding of its own, and then a valid setup of that
// binding: it is the binding's first, so it is accepted. A provider that
// served a command before refusing it answers already_exists.
func transportRefusedNoEffect(p *probe) {
	if p.tg.DuplicateSetup == DuplicateAccepted {
		p.t.Skipf("the target accepts a second setup of a binding (duplicate_setup \"accepted\"), so a served setup leaves no trace to find")
	}
	for _, tc := range []struct {
		what   string
		path   string
		status int
		body   func(setup []byte) []byte
	}{
		{"a setup with an unknown field in its operation", "/v1/operations", http.StatusBadRequest, func(setup []byte) []byte {
			var doc map[string]any
			_ = json.Unmarshal(setup, &doc)
			doc["operation"].(map[string]any)["conformance_unknown_field"] = true
			data, _ := json.Marshal(doc)
			return data
		}},
		{"a setup followed by a second JSON value", "/v1/operations", http.StatusBadRequest, func(setup []byte) []byte {
			return append(setup, []byte(` {"contract":"environment/v1"}`)...)
		}},
		{"a setup posted to an unknown path", "/v1/conformance-no-such-route", http.StatusNotFound, func(setup []byte) []byte { return setup }},
	} {
		c := p.binding()
		setup, _ := json.Marshal(c.Setup(p.tg.SetupConfiguration))
		ex := p.raw(tc.path, p.tg.Token, tc.body(setup))
		if ex.Status != tc.status {
			// The case of that rule reports the wrong answer; a setup
			// answered 200 is torn down.
			if ex.Status == http.StatusOK {
				p.teardownLater(c)
			}
			continue
		}
		ex = p.must(ruleRefused, c.Setup(p.tg.SetupConfiguration))
		p.teardownLater(c)
		if got := ex.receipt(); got.Type != envapi.ReceiptAccepted {
			p.fail(ruleRefused, ex, "after %s was answered %d, the binding's valid setup answered %q %s, want accepted: the refused setup had been served", tc.what, tc.status, got.Type, got.Code)
		}
	}
}
