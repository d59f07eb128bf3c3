package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Signals answers a context that ends at the first SIGINT or SIGTERM the
// command name receives (its cause naming the signal), for its work to stop cleanly (a turn
// interrupted, a server drained), which may take a while; it says so on
// stderr. A second signal quits at once with status 1: stopping cleanly
// can wait on a server that no longer answers, and an interrupt must
// still end the command then. Call stop when the work has returned.
func Signals(name string) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			fmt.Fprintf(os.Stderr, "%s: %v: stopping (signal again to quit at once)\n", name, s)
			cancel(fmt.Errorf("%v signal received", s))
		case <-done:
			return
		}
		select {
		case s := <-sig:
			fmt.Fprintf(os.Stderr, "%s: %v again: quitting without stopping cleanly\n", name, s)
			os.Exit(1)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel(nil)
	}
}
