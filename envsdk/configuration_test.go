package envsdk_test

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// mapConfig decodes its configuration into whatever decode names: a map,
// a pointer to a struct, a raw value.
type mapConfig struct {
	envsdk.Base
	decode func(c *envsdk.Ctx) error
}

func (p *mapConfig) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	return envsdk.SetupResult{}, p.decode(c)
}

type labelled struct {
	Label string `json:"label" validate:"max=8"`
}

// DecodeConfiguration takes any type encoding/json decodes into, not only
// a struct: a configuration of free-form labels decodes into a map, and
// an optional one into a pointer. The validator tags of a struct reached
// through pointers are still checked.
func TestDecodeConfigurationIntoAnyType(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		decode func(c *envsdk.Ctx) error
		code   string // "" for accepted
	}{
		{"map", `{"team":"infra"}`, func(c *envsdk.Ctx) error {
			var m map[string]string
			if err := c.DecodeConfiguration(&m); err != nil {
				return err
			}
			if m["team"] != "infra" {
				return envsdk.Failf("wrong", "decoded %v", m)
			}
			return nil
		}, ""},
		{"map of the wrong type", `{"team":1}`, func(c *envsdk.Ctx) error {
			var m map[string]string
			return c.DecodeConfiguration(&m)
		}, envapi.CodeInvalidConfiguration},
		{"raw", `[1,2]`, func(c *envsdk.Ctx) error {
			var raw json.RawMessage
			return c.DecodeConfiguration(&raw)
		}, ""},
		{"pointer to a struct", `{"label":"a"}`, func(c *envsdk.Ctx) error {
			var cfg *labelled
			if err := c.DecodeConfiguration(&cfg); err != nil {
				return err
			}
			if cfg == nil || cfg.Label != "a" {
				return envsdk.Failf("wrong", "decoded %+v", cfg)
			}
			return nil
		}, ""},
		{"pointer to a struct that fails its tags", `{"label":"far too long"}`, func(c *envsdk.Ctx) error {
			var cfg *labelled
			return c.DecodeConfiguration(&cfg)
		}, envapi.CodeInvalidConfiguration},
		{"map of structs that fail their tags", `{"a":{"label":"ok"},"b":{"label":"far too long"}}`, func(c *envsdk.Ctx) error {
			var cfg map[string]labelled
			return c.DecodeConfiguration(&cfg)
		}, envapi.CodeInvalidConfiguration},
		{"slice of structs", `[{"label":"ok"}]`, func(c *envsdk.Ctx) error {
			var cfg []*labelled
			return c.DecodeConfiguration(&cfg)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, &mapConfig{decode: tc.decode}, nil)
			r := send(t, srv, command(1, envapi.Setup(json.RawMessage(tc.config)))).Receipt
			switch {
			case tc.code == "" && r.Type != envapi.ReceiptAccepted:
				t.Fatalf("setup with %s answered %+v, want accepted", tc.config, r)
			case tc.code != "" && (r.Type != envapi.ReceiptFailure || r.Code != tc.code):
				t.Fatalf("setup with %s answered %+v, want the failure %s", tc.config, r, tc.code)
			}
		})
	}
}
