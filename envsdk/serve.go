package envsdk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long Serve lets running operations finish once its
// context ended.
var shutdownGrace = 30 * time.Second

// ListenAndServe serves h on addr until ctx ends, then shuts down
// gracefully, letting running operations finish for up to 30 seconds;
// the operations still running then are stopped (their contexts end) and
// the error says so. When h is a handler NewHandler made, a Tool that
// answered returned counts as running until its Finish was answered or
// its work context (Execution.Context) ended: the stop waits for it
// within the same 30 seconds, so that a provider that exits once Serve
// returns does not drop the Tool's outcome. When Serve returns, the work
// context of every Tool still going has ended, and the handler's idle
// connections to Brain are closed (those of a client given in
// Options.Client are the provider's to close).
//
// A client has ten seconds to send a request's header, and a bounded
// time to send its body and to read the answer, so that one that trickles
// either does not hold a connection for ever: 30 seconds plus a second
// per 256 KiB of the largest body h reads and of the largest answer it
// writes (those of Options for a handler NewHandler made, else
// DefaultMaxBodyBytes and envapi.MaxResponseBytes; with the defaults 94
// and 158 seconds). The bound of the answer starts when the answer does:
// an execute that runs long answers when it is done. A connection idle
// for two minutes is closed.
func ListenAndServe(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return Serve(ctx, ln, h)
}

// Serve is ListenAndServe on an existing listener.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           boundTransfers(h),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	d, _ := h.(drainer)
	err := srv.Shutdown(sctx)
	if err != nil {
		// Operations still running past the grace are stopped: closing
		// their connections ends their contexts, and the work contexts of
		// executes end too, so none is left running with a live context
		// after Serve returns.
		_ = srv.Close()
		err = fmt.Errorf("envsdk: operations still running %s after shutdown began were stopped: %w", shutdownGrace, err)
	} else if d != nil {
		// Tools that answered returned finish in the background.
		if derr := d.drain(sctx); derr != nil {
			err = fmt.Errorf("envsdk: Tools that answered returned had not finished %s after shutdown began and were stopped: %w", shutdownGrace, derr)
		}
	}
	if d != nil {
		// The work of Tools still going ends with Serve: those that had
		// not finished by the end of the grace, and those that cannot
		// finish (no finish grant).
		d.stopTools()
		// Nor does a connection to Brain stay open, idle: a Reporter
		// kept past Serve opens a new one.
		d.closeIdle()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
