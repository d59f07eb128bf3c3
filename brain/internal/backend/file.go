package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/brain/internal/datadir"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/secrets"
)

// OpenFiles opens the file backend: it locks opts.DataDir and keeps the
// journal in sessions/, idempotency answers in requests/requests.log and
// the sealing and reporter keys in server-metadata/.
func OpenFiles(_ context.Context, opts Options) (_ *Backend, err error) {
	dir, err := datadir.Open(opts.DataDir)
	if err != nil {
		return nil, err
	}
	var closers []func() error
	release := func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		return errors.Join(append(errs, dir.Close())...)
	}
	defer func() {
		if err != nil {
			_ = release()
		}
	}()
	jopts := opts.Journal
	store, err := journal.OpenFileStore(dir.Path(datadir.SessionsName), &jopts)
	if err != nil {
		return nil, err
	}
	closers = append(closers, store.Close)
	sealed, err := secrets.Open(dir.Path("server-metadata"))
	if err != nil {
		return nil, err
	}
	key, err := envbind.LoadKey(dir.Path("server-metadata", envbind.KeyFileName))
	if err != nil {
		return nil, fmt.Errorf("reporter key: %w", err)
	}
	b := &Backend{Journal: store, Secrets: sealed, ReporterKey: key}
	b.OpenRequests = func(o *idem.Options) (idem.Requests, error) {
		r, err := idem.Open(dir.Path("requests", "requests.log"), o)
		if err != nil {
			return nil, err
		}
		return idem.FileRequests(r), nil
	}
	b.Close = release
	return b, nil
}
