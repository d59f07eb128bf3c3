package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
)

// A session whose default loop is configured with a negative max_steps
// fails its turn with agentloop_failed, naming the field, and calls no
// model: the value is not taken for the default budget.
func TestDefaultLoopRefusesNegativeMaxSteps(t *testing.T) {
	e := agentlooptest.Start(t)
	sid := e.Create(t, e.Admit(t, builtin.DefaultWasm()), json.RawMessage(`{"max_steps":-1}`))
	_, err := e.Send(context.Background(), sid, `{"reply":"should not run"}`)
	var ae *api.ApiError
	if !errors.As(err, &ae) || ae.Code != api.FailureAgentloopFailed || !strings.Contains(ae.Message, "max_steps") {
		t.Fatalf("turn with max_steps -1 = %v, want agentloop_failed naming max_steps", err)
	}
	for _, ev := range e.Events(t, sid) {
		if ev.EventType == api.KindModelCallStarted {
			t.Fatalf("a model was called: %s", ev.Data)
		}
	}
}
