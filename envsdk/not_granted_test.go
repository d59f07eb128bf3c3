package envsdk

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestRefusedByBrainIsNotGranted: a method Brain refuses as not granted
// (403 not_granted) is ErrNotGranted to the caller, as a method refused
// without a request is; other refusals are not.
func TestRefusedByBrainIsNotGranted(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("s1", 7) // a Tool's grant: no kv_read
	// The grant as a provider might have it, listing kv_read anyway.
	claimed := envapi.Grant{URL: g.URL, Token: g.Token, Methods: append(append([]string(nil), g.Methods...), envapi.MethodKVRead)}
	inv := newInvocation(&claimed, newCaller(nil))
	_, _, err := inv.KVRead(context.Background(), "k")
	var ce *CallError
	if !errors.As(err, &ce) || ce.Status != 403 || !errors.Is(err, ErrNotGranted) {
		t.Fatalf("kv_read refused by Brain = %v, want a 403 CallError that is ErrNotGranted", err)
	}
	b.Revoke(g.Token)
	if _, err := inv.Emit(context.Background(), "x", nil); err == nil || errors.Is(err, ErrNotGranted) {
		t.Fatalf("emit with a revoked token = %v, want an error that is not ErrNotGranted", err)
	}
}
