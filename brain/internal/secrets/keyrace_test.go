package secrets

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestFirstOpensAgreeOnTheKey: stores opened at once on a directory with
// no key yet all seal under one key. Were a later key written over an
// earlier one, what was sealed under the earlier key would never unseal
// again.
func TestFirstOpensAgreeOnTheKey(t *testing.T) {
	ctx := context.Background()
	const opens = 6
	dir := filepath.Join(t.TempDir(), "server-metadata")
	var wg sync.WaitGroup
	errs := make([]error, opens)
	start := make(chan struct{})
	for i := range opens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, err := Open(dir)
			if err == nil {
				err = s.Put(ctx, fmt.Sprintf("ses_%d", i), "k", []byte("v"))
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if v, err := s.Get(ctx, fmt.Sprintf("ses_%d", i), "k"); err != nil || string(v) != "v" {
			t.Errorf("secret sealed by open %d = %q, %v; want it to unseal", i, v, err)
		}
	}
}
