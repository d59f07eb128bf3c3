package journal

import "context"

// Feed is the writing end of one Subscription, for Store implementations
// outside this package: the store pushes each committed record exactly
// once, in sequence order, and the Subscription keeps the backlog and lag
// rules of Store.Subscribe.
type Feed struct{ sub *Subscription }

// NewFeed answers the feed of a new subscription to session that delivers
// the records after `after`. Records below liveFrom are read through read
// (a page of committed records after a sequence, empty when there are
// none); the store pushes every record from liveFrom on. unregister, if
// not nil, runs once when the subscription is closed.
func NewFeed(session string, after, liveFrom uint64, backlog int,
	read func(ctx context.Context, after uint64) ([]Record, error), unregister func()) *Feed {
	var unreg func(*Subscription)
	if unregister != nil {
		unreg = func(*Subscription) { unregister() }
	}
	return &Feed{sub: newSubscription(session, after, liveFrom, backlog, read, unreg)}
}

// Subscription answers the reading end.
func (f *Feed) Subscription() *Subscription { return f.sub }

// Push offers committed records, which must continue the sequence pushed
// so far (starting at liveFrom). It never blocks: when the backlog would
// overflow, the subscription ends with ErrLagged.
func (f *Feed) Push(recs []Record) { f.sub.push(recs) }

// End stops the subscription with err once the records already delivered
// are consumed (ErrNotFound when the session was deleted, ErrClosed when
// the store closed).
func (f *Feed) End(err error) { f.sub.end(err) }

// CheckAppend validates the arguments of Store.Append as FileStore does:
// the session id and each record (kind, JSON data and origin, size), with
// errors wrapping ErrInvalid or ErrTooLarge.
func CheckAppend(session string, records []Record) error {
	if err := checkSessionID(session); err != nil {
		return err
	}
	_, err := checkRecords(records, DefaultMaxRecordBytes)
	return err
}

// CheckSession validates a session id as FileStore does (an error wrapping
// ErrInvalid).
func CheckSession(id string) error { return checkSessionID(id) }

// FrameSize is the size of r's frame in FileStore's format, the measure of
// Read's byte bound.
func FrameSize(r *Record) int { return frameSize(r) }
