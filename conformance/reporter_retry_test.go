package conformance_test

import (
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// retriesReports is the reference provider whose report method posts its
// observation again when the first post's answer does not come back.
type retriesReports struct{ *reference }

func (p retriesReports) Methods() map[string]envsdk.Method {
	methods := p.reference.Methods()
	report := methods["report"]
	report.Run = func(c *envsdk.Ctx, _ json.RawMessage) (any, error) {
		obs := envapi.Observation{Scope: envapi.ScopeEnvironment, Availability: envapi.Available, Message: "ready"}
		seq, err := c.Reporter().Result(c.Context(), obs, nil)
		if err != nil {
			seq, err = c.Reporter().Result(c.Context(), obs, nil)
		}
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		return map[string]uint64{"sequence": seq}, nil
	}
	methods["report"] = report
	return methods
}
