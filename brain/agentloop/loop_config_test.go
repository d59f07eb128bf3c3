package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// A negative max_steps is refused, naming the field, before any model
// call; zero, null and an absent field select the default budget.
func TestDefaultRefusesNegativeMaxSteps(t *testing.T) {
	for _, conf := range []string{`{"max_steps":-1}`, `{"max_steps":-64}`} {
		f := &fakeServices{answers: []api.ModelResult{{Message: text("assistant", "hi"), StopReason: api.StopEndTurn}}}
		_, err := Default(context.Background(), f, api.TurnInput{Input: &api.UserInput{Message: "go"}, Configuration: json.RawMessage(conf)})
		if !errors.Is(err, ErrConfiguration) || !strings.Contains(err.Error(), "max_steps") {
			t.Errorf("Default with %s = %v, want ErrConfiguration naming max_steps", conf, err)
		}
		if len(f.requests) != 0 || len(f.saved) != 0 {
			t.Errorf("Default with %s made %d model calls and saved %d messages, want none", conf, len(f.requests), len(f.saved))
		}
	}
	for _, conf := range []string{`{"max_steps":0}`, `{"max_steps":null}`, `{}`, `null`} {
		f := &fakeServices{answers: []api.ModelResult{{Message: text("assistant", "hi"), StopReason: api.StopEndTurn}}}
		if _, err := Default(context.Background(), f, api.TurnInput{Input: &api.UserInput{Message: "go"}, Configuration: json.RawMessage(conf)}); err != nil || len(f.requests) != 1 {
			t.Errorf("Default with %s = %v after %d model calls, want one call and no error", conf, err, len(f.requests))
		}
	}
}

// ParseConfiguration refuses exactly the configurations Default refuses,
// with the same message, so that a configuration checked by it before
// any turn runs never fails a turn of Default.
func TestParseConfigurationAgreesWithDefault(t *testing.T) {
	for _, conf := range []string{``, `null`, `{}`, `{"max_steps":0}`, `{"max_steps":null}`, `{"max_steps":5,"x":[1]}`, `{"MAX_STEPS":2}`,
		`{"max_steps":-1}`, `{"max_steps":"5"}`, `{"max_steps":1.5}`, `{"max_steps":true}`, `[]`, `"x"`, `3`, `{"max_steps":1} {}`} {
		f := &fakeServices{answers: []api.ModelResult{{Message: text("assistant", "hi"), StopReason: api.StopEndTurn}}}
		_, runErr := Default(context.Background(), f, api.TurnInput{Input: &api.UserInput{Message: "go"}, Configuration: json.RawMessage(conf)})
		_, parseErr := ParseConfiguration(json.RawMessage(conf))
		var ce *ConfigurationError
		if parseErr != nil && (!errors.As(parseErr, &ce) || !errors.Is(parseErr, ErrConfiguration)) {
			t.Errorf("ParseConfiguration(%s) = %v, want a *ConfigurationError wrapping ErrConfiguration", conf, parseErr)
		}
		if (parseErr == nil) != (runErr == nil) || parseErr != nil && parseErr.Error() != runErr.Error() {
			t.Errorf("configuration %s: ParseConfiguration = %v, Default = %v; want the same verdict", conf, parseErr, runErr)
		}
	}
}
