//go:build braintest_faults

package main

import (
	"os"
	"syscall"
)

// Built with -tags braintest_faults (crash tests only), "brain serve" dies
// by SIGKILL right after the claim of the idempotency key named by
// BRAIN_TEST_KILL_AFTER_CLAIM is durable (for a synchronous send, right
// after the journal commit that carries it).
func init() {
	key := os.Getenv("BRAIN_TEST_KILL_AFTER_CLAIM")
	if key == "" {
		return
	}
	afterClaim = func(_, k string) {
		if k == key {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
}
