package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestOperationsRacingDelete deletes ended sessions while other
// operations on them (a second delete, a message, summary and transcript
// reads, an end, an interrupt) run concurrently: each operation either
// runs before the deletion or finds the session gone (ErrNotFound); none
// fails on the state the deletion dropped.
func TestOperationsRacingDelete(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	ctx := context.Background()
	for i := range 800 {
		id := h.create(api.CreateSessionRequest{})
		if _, err := h.engine.End(ctx, id); err != nil {
			t.Fatal(err)
		}
		ops := map[string]func() error{
			"delete":  func() error { return h.engine.Delete(ctx, id) },
			"delete2": func() error { return h.engine.Delete(ctx, id) },
			"send": func() error {
				_, err := h.engine.Send(ctx, id, api.UserInput{Message: "late"})
				if errors.Is(err, ErrWrongState) {
					return nil
				}
				return err
			},
			"summary":    func() error { _, err := h.engine.Summary(ctx, id); return err },
			"transcript": func() error { _, err := h.engine.Transcript(ctx, id); return err },
			"end":        func() error { _, err := h.engine.End(ctx, id); return err },
			"interrupt":  func() error { return h.engine.Interrupt(ctx, id) },
		}
		var wg sync.WaitGroup
		problems := make(chan string, len(ops))
		for name, op := range ops {
			wg.Go(func() {
				defer func() {
					if r := recover(); r != nil {
						problems <- fmt.Sprintf("%s panicked: %v", name, r)
					}
				}()
				if err := op(); err != nil && !errors.Is(err, ErrNotFound) {
					problems <- fmt.Sprintf("%s = %v", name, err)
				}
			})
		}
		wg.Wait()
		close(problems)
		for p := range problems {
			t.Errorf("session %d: %s", i, p)
		}
		if t.Failed() {
			return
		}
		if _, err := h.engine.Summary(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("session %d: Summary after the deletes = %v, want ErrNotFound", i, err)
		}
	}
}
