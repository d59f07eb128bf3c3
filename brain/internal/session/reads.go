package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// Summary answers the session's status and last sequence. It reads the
// journal (and checkpoint) of a passivated session without keeping it in
// memory; a session left in motion by a crash is recovered first.
func (e *Engine) Summary(ctx context.Context, id string) (api.SessionSummary, error) {
	s, err := e.acquire(ctx, id, false)
	if err != nil {
		return api.SessionSummary{}, err
	}
	defer s.releaseRead()
	if err := s.lockLive(); err != nil {
		return api.SessionSummary{}, err
	}
	defer s.mu.Unlock()
	if err := s.readableLocked(); err != nil {
		return api.SessionSummary{}, err
	}
	return s.summaryLocked(), nil
}

// List summarises every readable session; damaged ones are skipped. A
// session whose state cannot be made what its journal holds (Summary
// answers ErrUnavailable) fails the list: it is not left out as if it
// did not exist.
func (e *Engine) List(ctx context.Context) ([]api.SessionSummary, error) {
	ids, err := e.store.Sessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("session: list: %w", err)
	}
	out := make([]api.SessionSummary, 0, len(ids))
	for _, id := range ids {
		sum, err := e.Summary(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, ErrUnavailable) {
				return nil, err
			}
			continue
		}
		out = append(out, sum)
	}
	return out, nil
}

// Transcript answers the saved messages and the sequence they reflect.
func (e *Engine) Transcript(ctx context.Context, id string) (api.SessionTranscript, error) {
	s, err := e.acquire(ctx, id, false)
	if err != nil {
		return api.SessionTranscript{}, err
	}
	defer s.releaseRead()
	if err := s.lockLive(); err != nil {
		return api.SessionTranscript{}, err
	}
	defer s.mu.Unlock()
	if err := s.readableLocked(); err != nil {
		return api.SessionTranscript{}, err
	}
	msgs := s.st.Transcript[:len(s.st.Transcript):len(s.st.Transcript)] // callers cannot append into its spare capacity
	if msgs == nil {
		msgs = []api.Message{}
	}
	return api.SessionTranscript{Messages: msgs, ThroughSequence: s.st.last()}, nil
}

// Events answers a page of public events strictly after `after`: at most
// 1,000 events and normally at most 8 MiB of journal frames (a single
// larger event comes alone). NextCursor is the last returned sequence, or
// `after` when the page is empty.
func (e *Engine) Events(ctx context.Context, id string, after uint64) (api.EventPage, error) {
	s, err := e.acquire(ctx, id, false)
	if err != nil {
		return api.EventPage{}, err
	}
	err = s.lockLive()
	if err == nil {
		err = s.closeUnendedForReadLocked()
		s.mu.Unlock()
	}
	s.releaseRead()
	if err != nil {
		return api.EventPage{}, err
	}
	return e.readEvents(ctx, id, after)
}

// readableLocked makes the session's state in memory what its journal
// holds before a read answers it: the deferred records are appended (the
// reader waits, not the turn), and what a commit that failed left open
// is closed as a reload would close it (closeUnendedForReadLocked).
func (s *sess) readableLocked() error {
	if err := s.appendPendingLocked(); err != nil {
		return err
	}
	return s.closeUnendedForReadLocked()
}

// closeUnendedForReadLocked commits, before a read of a session whose
// commit failed while it stayed in memory (other work of it still runs),
// the failures that close the operations, activations and turns whose
// end could not be written, as a reload of the journal would: a reader
// never sees them open while nothing runs them, nor any state the
// journal does not hold. When they cannot be written the read is refused
// with ErrUnavailable (the journal is failing; retry later).
func (s *sess) closeUnendedForReadLocked() error {
	if err := s.closeUnendedLocked(); err != nil {
		if refused(err) {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	return nil
}

func (e *Engine) readEvents(ctx context.Context, id string, after uint64) (api.EventPage, error) {
	page := api.EventPage{Events: []api.Event{}, NextCursor: after}
	bytes := 0
	cursor := after
	for len(page.Events) < api.MaxPageEvents {
		recs, err := e.store.Read(ctx, id, cursor, api.MaxPageEvents-len(page.Events), api.MaxPageBytes)
		if err != nil {
			if errors.Is(err, journal.ErrNotFound) {
				return page, fmt.Errorf("session %s: %w", id, ErrNotFound)
			}
			return page, fmt.Errorf("session %s: read events: %w", id, err)
		}
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			// The bound is on the events as served: a record that refers
			// to an earlier one's bytes is measured expanded.
			ev, ok := e.project(id, r)
			if !ok {
				cursor = r.Sequence
				continue
			}
			size := len(ev.Data) + len(r.Origin) + len(r.Kind) + 32
			if len(page.Events) > 0 && bytes+size > api.MaxPageBytes {
				return page, nil
			}
			cursor = r.Sequence
			bytes += size
			page.Events = append(page.Events, ev)
			page.NextCursor = ev.Sequence
			if len(page.Events) == api.MaxPageEvents {
				return page, nil
			}
		}
	}
	return page, nil
}
