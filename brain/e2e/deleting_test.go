package e2e

import (
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// While an environment's teardown is in flight its view says deleting and
// names the teardown as its pending operation, also when a call on it
// (here the turn-end release) is still being answered.
func TestDeletingWhileCallInFlight(t *testing.T) {
	b := newBrain(t, brain.Limits{})
	c := newClient(t, b.URL)
	f := newFixture(t)
	id := c.create(api.CreateSessionRequest{Environments: []api.Environment{
		f.env("box", &bindingConf{Setup: "release", Release: "hold", Teardown: "hold"}),
	}}).SessionID
	if status, body := c.send(id, "hello"); status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	f.waitFor(envapi.RequestCall, 1)
	path := "/v1/sessions/" + id + "/environments"
	ref := map[string]any{"name": "box", "sequence": 1}
	deleted := make(chan envapi.EnvironmentView, 1)
	go func() {
		var view envapi.EnvironmentView
		c.must(http.StatusOK, http.MethodPost, path, map[string]any{"operation": "delete", "environment": ref}, &view)
		deleted <- view
	}()
	teardown := f.waitFor(envapi.RequestTeardown, 1)[0].Cmd.Operation.Sequence
	for i := 0; i < 40; i++ {
		var view envapi.EnvironmentView
		c.must(http.StatusOK, http.MethodPost, path, map[string]any{"operation": "get", "environment": ref}, &view)
		if view.State != envapi.StateDeleting || view.PendingOperation == nil || *view.PendingOperation != teardown {
			pending := uint64(0)
			if view.PendingOperation != nil {
				pending = *view.PendingOperation
			}
			t.Fatalf("get %d during teardown %d: state %q, pending_operation %d; want deleting, %d", i, teardown, view.State, pending, teardown)
		}
	}
	f.Open("teardown")
	if view := <-deleted; view.State != envapi.StateDeleted {
		t.Fatalf("delete answered %+v", view)
	}
	f.Open("release")
}
