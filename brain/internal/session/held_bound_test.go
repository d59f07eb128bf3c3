package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// A loop that keeps writing its KV, without any model or tool call,
// while the journal refuses records is answered the journal's error
// (unavailable) once what is held for the journal reaches its bound,
// rather than holding ever more in memory until its turn's time is up.
// Once the journal takes records again the session runs turns again.
func TestLoopWritesHeldWhileRefusedAreBounded(t *testing.T) {
	const value = 256 << 10
	const tries = 4 * maxHeldBytes / value
	var puts int
	var putErr error
	var store *refusingStore
	loops := map[string]agentloop.Func{"fill": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		if in.Input.Message != "fill" {
			return api.TurnOutput{}, nil
		}
		v := json.RawMessage(`"` + strings.Repeat("v", value) + `"`)
		for i := range tries {
			if _, err := svc.KVPut(ctx, "k", v); err != nil {
				putErr = err
				return api.TurnOutput{}, err
			}
			puts++
			if i == 0 {
				// The journal has refused what the turn holds.
				for store.refused.Load() == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}
		return api.TurnOutput{}, nil
	}}
	h, store := refusingHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("fill")})
	ctx := context.Background()
	store.failing.Store(true)
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "fill"}); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("Send on a full disk = %v, want journal.ErrWrite", err)
	}
	if !errors.Is(putErr, ErrUnavailable) || !errors.Is(putErr, journal.ErrWrite) {
		t.Fatalf("after %d KV writes of %d bytes held while the journal refused them, the loop's write was answered %v, want ErrUnavailable wrapping journal.ErrWrite", puts, value, putErr)
	}
	if held := int64(puts) * value; held > maxHeldBytes+value {
		t.Fatalf("%d bytes of KV writes held while the journal refused them, bound %d", held, maxHeldBytes)
	}
	store.failing.Store(false)
	if sum, err := h.engine.Send(ctx, id, api.UserInput{Message: "after"}); err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("Send after the journal took records again = %+v, %v", sum, err)
	}
	if n := len(ofKind(h.records(id), api.KindKVSet)); n != 0 {
		t.Fatalf("%d kv_set records of the refused turn durable", n)
	}
}
