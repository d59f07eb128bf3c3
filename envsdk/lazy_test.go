package envsdk_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
)

func TestLazySharesOneAllocation(t *testing.T) {
	var l envsdk.Lazy[int]
	var allocs atomic.Int64
	gate := make(chan struct{})
	alloc := func(context.Context) (int, error) {
		allocs.Add(1)
		<-gate
		return 42, nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := l.Get(context.Background(), alloc)
			if err != nil || v != 42 {
				errs <- errors.New("wrong value")
			}
		}()
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := allocs.Load(); n != 1 {
		t.Errorf("50 concurrent first calls allocated %d times, want 1", n)
	}
}

func TestLazyFailureIsSticky(t *testing.T) {
	var l envsdk.Lazy[string]
	var allocs atomic.Int64
	boom := errors.New("disk full")
	alloc := func(context.Context) (string, error) {
		allocs.Add(1)
		return "", boom
	}
	for i := range 5 {
		if _, err := l.Get(context.Background(), alloc); !errors.Is(err, boom) {
			t.Fatalf("call %d: err = %v, want the first failure", i, err)
		}
	}
	if n := allocs.Load(); n != 1 {
		t.Errorf("failed allocation ran %d times, want 1", n)
	}
	if _, err, done := l.Peek(); !done || !errors.Is(err, boom) {
		t.Errorf("Peek = %v, %v; want the sticky failure", err, done)
	}
	l.Reset()
	if v, err := l.Get(context.Background(), func(context.Context) (string, error) { return "ok", nil }); err != nil || v != "ok" {
		t.Errorf("after Reset Get = %q, %v; want a fresh allocation", v, err)
	}
}

func TestLazyWaiterGivesUp(t *testing.T) {
	var l envsdk.Lazy[int]
	gate := make(chan struct{})
	defer close(gate)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.Get(ctx, func(context.Context) (int, error) { <-gate; return 1, nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestKeepFirst(t *testing.T) {
	first := envsdk.Fail("timeout", "deadline expired").WithDetails(map[string]int{"pid": 7})
	got := envsdk.KeepFirst(first, errors.New("kill: permission denied"))
	if got.Code != "timeout" || got.Message != "deadline expired" {
		t.Errorf("KeepFirst changed the cause: %+v", got)
	}
	if string(got.Details) != `{"cleanup_error":"kill: permission denied","pid":7}` {
		t.Errorf("details = %s", got.Details)
	}
	if envsdk.KeepFirst(first, nil) != first {
		t.Error("KeepFirst without a cleanup error must return the cause as is")
	}
}
