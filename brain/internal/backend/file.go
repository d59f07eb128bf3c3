package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/datadir"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/secrets"
)

// OpenFiles opens the file backend: it locks opts.DataDir and keeps the
// journal in sessions/, idempotency answers in requests/requests.log and
// the sealing and reporter keys in server-metadata/. The sealed secrets of
// sessions the journal does not hold are removed before it returns.
func OpenFiles(ctx context.Context, opts Options) (_ *Backend, err error) {
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
	// Idempotency claims and answers that ride the journal's commits
	// (idem.Store.ClaimRiding) reach the requests log from the journal:
	// each durable one as it is acknowledged, those a crash may have kept
	// from it when the open replays the commit log, and the requests log
	// is durable before the log files holding them are retired.
	requestsPath := dir.Path("requests", "requests.log")
	var ridden atomic.Pointer[idem.Store]
	jopts := opts.Journal
	onDurable := jopts.OnDurable
	jopts.OnDurable = func(session string, recs []journal.Record) {
		if onDurable != nil {
			onDurable(session, recs)
		}
		if r := ridden.Load(); r != nil {
			for _, rec := range recs {
				// A failure is kept by the store (ErrLost after Close,
				// a failed write until its rewrite) and answered by
				// SyncJournaled, so the log files stay.
				_ = r.Journaled(rec.Kind, rec.Data)
			}
		}
	}
	var replayed []idem.JournaledRecord
	jopts.OnReplay = func(_ string, recs []journal.Record) error {
		for _, rec := range recs {
			if rec.Kind == commits.ClaimKind || rec.Kind == commits.AnswerKind {
				replayed = append(replayed, idem.JournaledRecord{Kind: rec.Kind, Data: bytes.Clone(rec.Data)})
			}
		}
		return nil
	}
	jopts.BeforeRetire = func() error {
		if r := ridden.Load(); r != nil {
			return r.SyncJournaled()
		}
		// At open, before the requests log is: what the replay found.
		err := idem.RecoverJournaled(requestsPath, replayed)
		replayed = nil
		return err
	}
	store, err := journal.OpenFileStore(dir.Path(datadir.SessionsName), &jopts)
	if err != nil {
		return nil, err
	}
	closers = append(closers, store.Close)
	sealed, err := secrets.Open(dir.Path("server-metadata"))
	if err != nil {
		return nil, err
	}
	if err := sweepSecrets(ctx, store, dir.Path(datadir.SessionsName), sealed, opts.Logger); err != nil {
		return nil, err
	}
	key, err := envbind.LoadKey(dir.Path("server-metadata", envbind.KeyFileName))
	if err != nil {
		return nil, fmt.Errorf("reporter key: %w", err)
	}
	b := &Backend{Journal: store, Secrets: sealed, ReporterKey: key}
	b.OpenRequests = func(o *idem.Options) (idem.Requests, error) {
		r, err := idem.Open(requestsPath, o)
		if err != nil {
			return nil, err
		}
		ridden.Store(r)
		return idem.FileRequests(r), nil
	}
	b.Close = release
	return b, nil
}

// sweepSecrets removes the sealed secrets of every session the journal in
// sessionsDir does not hold (secrets.Store.Sweep). A session the journal
// holds has a record or is damaged: the directory a create killed before
// its first record was durable leaves behind opens with no record, as a
// session that does not exist, and its secrets are removed too. A sessions
// directory that cannot be read stops the open; files that cannot be
// removed are logged and swept again at the next open.
func sweepSecrets(ctx context.Context, store journal.Store, sessionsDir string, sealed *secrets.Store, log *slog.Logger) error {
	// The session directories, not store.Sessions: listing reads each
	// session's first segment once, which would make every start read
	// every session. Only a session with secrets is looked at below.
	entries, err := os.ReadDir(sessionsDir)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("sweep secrets: %w", err)
	}
	known := make(map[string]bool, len(entries))
	for _, e := range entries {
		// Not only directories: the journal lists what stands in a
		// session directory's place (a symbolic link) as damaged, and
		// a damaged session's secrets are kept.
		if journal.CheckSession(e.Name()) == nil {
			known[e.Name()] = true
		}
	}
	removed, err := sealed.Sweep(ctx, func(id string) bool {
		if !known[id] {
			return false
		}
		if holdsFrames(filepath.Join(sessionsDir, id)) {
			return true
		}
		// Only the journal tells a session with no record from a damaged
		// one; an error that leaves it unknown keeps the secrets.
		next, err := store.Next(ctx, id)
		return err != nil || next > 1
	})
	if log == nil {
		return nil
	}
	if len(removed) > 0 {
		log.Info("removed the sealed secrets of sessions that do not exist", "sessions", len(removed))
	}
	if err != nil {
		log.Warn("sweep secrets", "err", err)
	}
	return nil
}

// holdsFrames reports whether the journal directory of the session in dir
// (see package journal: dir/journal/{first}.segment) has a file that is
// not empty, or cannot be read: such a session is held without opening
// it. One with no such file (a first append cut short leaves only an
// empty segment, or nothing) is asked of the journal.
func holdsFrames(dir string) bool {
	entries, err := os.ReadDir(filepath.Join(dir, "journal"))
	if err != nil {
		return !os.IsNotExist(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > 0 {
			return true
		}
	}
	return false
}
