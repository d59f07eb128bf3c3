package envsdk_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A callback call made under a context with a deadline is bounded by that
// deadline, not by the default client's own bound: a model call that
// answers after that bound, well within the execution's deadline, is
// answered. One without a deadline keeps the default bound.
func TestGrantCallsFollowTheirDeadline(t *testing.T) {
	defer envsdk.SetGrantTimeout(100 * time.Millisecond)()
	const answer = `{"message":{"role":"assistant","content":[]},"stop_reason":"end_turn","usage":{}}`
	brain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer))
	}))
	t.Cleanup(brain.Close)
	g := &envapi.Grant{URL: brain.URL + "/call", Token: "cb-token", Methods: envapi.AgentloopMethods()}
	p := &invocationKeeper{got: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, p, nil)
	send(t, srv, execute(2, "x", nil, g))
	inv := <-p.got

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := inv.Model(ctx, json.RawMessage(`{"messages":[]}`))
	if err != nil || string(got) != answer {
		t.Fatalf("model under a 10 s deadline = %s, %v; want the answer", got, err)
	}
	if _, err := inv.Model(context.Background(), json.RawMessage(`{"messages":[]}`)); err == nil {
		t.Fatal("model without a deadline outlived the default bound")
	}
}
