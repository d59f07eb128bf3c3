package session

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// undeletableSecrets is a MemSecrets whose first DeleteAll fails.
type undeletableSecrets struct {
	*MemSecrets
	failed atomic.Bool
}

func (u *undeletableSecrets) DeleteAll(ctx context.Context, session string) error {
	if u.failed.CompareAndSwap(false, true) {
		return errors.New("secrets: store unavailable")
	}
	return u.MemSecrets.DeleteAll(ctx, session)
}

// A delete whose secrets cannot be removed fails and leaves the session
// in place, so that deleting it again removes its credentials: they never
// outlive a session that is gone.
func TestDeleteLeavesNoSecretsBehind(t *testing.T) {
	ctx := context.Background()
	sec := &undeletableSecrets{MemSecrets: NewMemSecrets()}
	h := newHarness(t, Config{Secrets: sec}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Model.APIKey = "sk-model-key"
	req.Environments[0].Credential = "box-credential"
	id := h.create(req)
	if _, err := h.engine.End(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Delete(ctx, id); err == nil {
		t.Fatal("delete succeeded though the secrets could not be removed")
	}
	if err := h.engine.Delete(ctx, id); err != nil {
		t.Fatalf("delete again: %v", err)
	}
	if n := sec.Len(); n != 0 {
		t.Errorf("the secrets of %d sessions are kept after the delete", n)
	}
	if _, err := h.engine.Summary(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("summary of the deleted session: %v, want ErrNotFound", err)
	}
}
