package idem

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestAmbiguousClaimOutlivesRetention: retention forgets completed
// answers, but a claim that never got its answer stays ambiguous, so its
// request is never executed again, however late the key is reused.
func TestAmbiguousClaimOutlivesRetention(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	opts := &Options{Retention: time.Second, Now: clock}
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, opts)
	ctx := context.Background()
	d := Digest([]byte("x"))
	if _, _, err := s.Claim(ctx, "s", "crashed", d); err != nil {
		t.Fatal(err)
	}
	c, _, err := s.Claim(ctx, "s", "abandoned", d)
	if err != nil {
		t.Fatal(err)
	}
	c.Abandon()
	now = now.Add(3 * time.Second)
	if _, _, err := s.Claim(ctx, "s", "abandoned", d); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("abandoned claim past the retention = %v, want ErrAmbiguous", err)
	}
	s.Close() // the process ends with "crashed" still claimed

	now = now.Add(48 * time.Hour)
	s2 := open(t, path, opts)
	for _, k := range []string{"crashed", "abandoned"} {
		if c, a, err := s2.Claim(ctx, "s", k, d); !errors.Is(err, ErrAmbiguous) {
			t.Fatalf("unanswered claim %q after a restart past the retention = %v, %v, %v; want ErrAmbiguous", k, c, a, err)
		}
	}
}
