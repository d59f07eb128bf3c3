package session

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// unwritableSecrets is a MemSecrets whose Put of an environment
// credential fails while fail is set.
type unwritableSecrets struct {
	*MemSecrets
	fail atomic.Bool
}

func (u *unwritableSecrets) Put(ctx context.Context, session, name string, value []byte) error {
	if u.fail.Load() && strings.HasSuffix(name, ".credential") {
		return errors.New("secrets: disk full")
	}
	return u.MemSecrets.Put(ctx, session, name, value)
}

// A create whose environment credential cannot be sealed fails and keeps
// none of the secrets it had sealed already (the model key): they would
// outlive a session that was never created. The same id can be created
// once the store works again.
func TestCreateThatCannotSealLeavesNoSecrets(t *testing.T) {
	ctx := context.Background()
	sec := &unwritableSecrets{MemSecrets: NewMemSecrets()}
	sec.fail.Store(true)
	h := newHarness(t, Config{Secrets: sec}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Model = api.ModelConfig{Provider: "scripted", Name: "test", APIKey: "sk-model-key"}
	req.Environments[0].Credential = "box-credential"
	id := NewSessionID()
	if _, err := h.engine.Create(ctx, id, req); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("create with a credential that cannot be sealed: %v, want the store's error", err)
	}
	if n := sec.Len(); n != 0 {
		t.Errorf("the secrets of %d sessions are kept after a create that failed", n)
	}
	if _, err := h.engine.Summary(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("summary of the session whose create failed: %v, want ErrNotFound", err)
	}
	sec.fail.Store(false)
	if _, err := h.engine.Create(ctx, id, req); err != nil {
		t.Fatalf("create again: %v", err)
	}
	if v, _ := sec.Get(ctx, id, SecretModelAPIKey); string(v) != "sk-model-key" {
		t.Errorf("model key after the second create = %q", v)
	}
}
