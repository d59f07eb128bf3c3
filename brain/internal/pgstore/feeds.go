package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// sessionFeeds are the local subscriptions of one session. pushed is the
// last sequence pushed to them; every record after it is pushed exactly
// once, in order, by whoever first learns it was committed (a local
// append, or a notification of another node's). Until known, no read of
// the session's head succeeded: pushed means nothing, nothing is pushed,
// and the next Subscribe reads the head. mu is held across reads of the
// journal, which take Journal.mu: mu is never waited for with Journal.mu
// held.
type sessionFeeds struct {
	refs int // under Journal.mu: subscriptions and Subscribe calls in progress

	mu     sync.Mutex
	known  bool
	pushed uint64
	subs   map[*journal.Feed]struct{}
}

// Subscribe implements journal.Store. Local appends are pushed at once;
// another node's commits arrive through LISTEN/NOTIFY as a wake-up and are
// read from the journal, so the data is always the committed rows.
func (j *Journal) Subscribe(ctx context.Context, session string, after uint64, backlog int) (*journal.Subscription, error) {
	if err := journal.CheckSession(session); err != nil {
		return nil, err
	}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil, journal.ErrClosed
	}
	sf := j.feeds[session]
	if sf == nil {
		sf = &sessionFeeds{subs: map[*journal.Feed]struct{}{}}
		j.feeds[session] = sf
	}
	sf.refs++
	j.mu.Unlock()
	sf.mu.Lock() // held while the head is read, so no push slips between
	if !sf.known {
		// The first to follow the session, or the one before failed to
		// read the head.
		next, err := j.Next(ctx, session)
		if err != nil {
			sf.mu.Unlock()
			j.unref(session, sf)
			return nil, err
		}
		sf.pushed, sf.known = next-1, true
	}
	defer sf.mu.Unlock()
	// Close ends the subscriptions it finds under sf.mu, after it marked
	// the journal closed.
	if err := j.usable(); err != nil {
		j.unref(session, sf)
		return nil, err
	}
	read := func(ctx context.Context, after uint64) ([]journal.Record, error) {
		return j.Read(ctx, session, after, 0, 0)
	}
	var f *journal.Feed
	f = journal.NewFeed(session, after, sf.pushed+1, backlog, read, func() {
		sf.mu.Lock()
		delete(sf.subs, f)
		sf.mu.Unlock()
		j.unref(session, sf)
	})
	sf.subs[f] = struct{}{}
	return f.Subscription(), nil
}

// unref drops a subscription or a Subscribe call from sf, and forgets the
// session's feed set once neither is left.
func (j *Journal) unref(session string, sf *sessionFeeds) {
	j.mu.Lock()
	defer j.mu.Unlock()
	sf.refs--
	if sf.refs == 0 && j.feeds[session] == sf {
		delete(j.feeds, session)
	}
}

func (j *Journal) feedsOf(session string) *sessionFeeds {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.feeds[session]
}

// published pushes the records of a local commit (from first) to local
// subscriptions, reading from the journal any committed before them that
// were not pushed yet.
func (j *Journal) published(session string, first uint64, recs []journal.Record) {
	sf := j.feedsOf(session)
	if sf == nil {
		return
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	last := first + uint64(len(recs)) - 1
	if !sf.known || last <= sf.pushed {
		return
	}
	if first > sf.pushed+1 {
		j.catchUp(context.Background(), session, sf, last)
		return
	}
	out := make([]journal.Record, 0, last-sf.pushed)
	for _, r := range recs[sf.pushed+1-first:] {
		out = append(out, clone(r))
	}
	sf.push(out)
}

// catchUp reads and pushes the records after sf.pushed through at least
// upTo (0: whatever is committed, read until a page comes back empty: a
// page cut by its bytes holds fewer records than a full one, yet more may
// follow). It holds sf.mu. A read failure leaves sf.pushed where it was:
// the next commit or notification retries. A journal found damaged ends
// the subscriptions with that error, once they delivered what came
// before: what follows the damage can never be delivered, and a
// subscriber left waiting for it would never learn why.
func (j *Journal) catchUp(ctx context.Context, session string, sf *sessionFeeds, upTo uint64) {
	for sf.known && (upTo == 0 || sf.pushed < upTo) {
		page, err := j.Read(ctx, session, sf.pushed, 0, 0)
		if errors.Is(err, journal.ErrDamaged) {
			for f := range sf.subs {
				f.End(err)
			}
			return
		}
		if err != nil || len(page) == 0 || page[0].Sequence != sf.pushed+1 {
			return
		}
		sf.push(page)
	}
}

func (sf *sessionFeeds) push(recs []journal.Record) {
	if len(recs) == 0 {
		return
	}
	for f := range sf.subs {
		f.Push(recs)
	}
	sf.pushed = recs[len(recs)-1].Sequence
}

// deleted ends the local subscriptions of a deleted session.
func (j *Journal) deleted(session string) {
	sf := j.feedsOf(session)
	if sf == nil {
		return
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	for f := range sf.subs {
		f.End(fmt.Errorf("pgstore: session %s deleted: %w", session, journal.ErrNotFound))
	}
	sf.pushed = 0
}

// wakePayload encodes a notification: "<hex session id> <sequence>".
func wakePayload(session string, seq uint64) string {
	return hex.EncodeToString([]byte(session)) + " " + strconv.FormatUint(seq, 10)
}

// parseWake decodes a notification payload; ok is false for anything
// that wakePayload does not produce for a valid session id.
func parseWake(payload string) (session string, seq uint64, ok bool) {
	hexID, seqText, found := cut(payload)
	if !found {
		return "", 0, false
	}
	id, err := hex.DecodeString(hexID)
	if err != nil || hex.EncodeToString(id) != hexID || journal.CheckSession(string(id)) != nil {
		return "", 0, false
	}
	seq, err = strconv.ParseUint(seqText, 10, 64)
	if err != nil || strconv.FormatUint(seq, 10) != seqText {
		return "", 0, false
	}
	return string(id), seq, true
}

// notified handles a notification payload from any node.
func (j *Journal) notified(payload string) {
	session, seq, ok := parseWake(payload)
	if !ok {
		return
	}
	if seq == 0 {
		j.deleted(session)
		return
	}
	sf := j.feedsOf(session)
	if sf == nil {
		return
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if seq > sf.pushed {
		j.catchUp(context.Background(), session, sf, seq)
	}
}

// catchUpAll reads what every followed session missed (after the listener
// reconnected: notifications sent meanwhile are lost).
func (j *Journal) catchUpAll(ctx context.Context) {
	j.mu.Lock()
	all := make(map[string]*sessionFeeds, len(j.feeds))
	for id, sf := range j.feeds {
		all[id] = sf
	}
	j.mu.Unlock()
	for id, sf := range all {
		sf.mu.Lock()
		j.catchUp(ctx, id, sf, 0)
		sf.mu.Unlock()
	}
}

func cut(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

func clone(r journal.Record) journal.Record {
	if r.Data != nil {
		r.Data = append([]byte(nil), r.Data...)
	}
	if r.Origin != nil {
		r.Origin = append([]byte{}, r.Origin...)
	}
	return r
}
