package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// ErrLost says records the journal made durable reached a closed store:
// the journal must keep its log files (see SyncJournaled).
var ErrLost = errors.New("idem: journaled records reached a closed store")

// journaled is the data of a commits.ClaimKind or commits.AnswerKind
// journal record; doc.go ("Claims that ride the journal") is the
// specification.
type journaled struct {
	V      int    `json:"v"`
	Scope  string `json:"scope"`
	Key    []byte `json:"key"`
	Digest []byte `json:"digest,omitempty"`
	AtMs   int64  `json:"at_ms"`
	Status int    `json:"status,omitempty"`
	Body   []byte `json:"body,omitempty"`
}

// decodeJournaled decodes the data of a journal record of kind into the
// requests.log record it stands for.
func decodeJournaled(kind string, data []byte) (record, error) {
	j, ok := parseJournaled(data)
	if !ok {
		if err := json.Unmarshal(data, &j); err != nil {
			return record{}, fmt.Errorf("%w: %s: %w", errPayload, kind, err)
		}
	}
	r := record{AtMs: j.AtMs, Scope: j.Scope, Key: string(j.Key)}
	switch {
	case j.V != 1:
		return record{}, fmt.Errorf("%w: %s version %d", errPayload, kind, j.V)
	case kind == commits.ClaimKind && len(j.Digest) == digestBytes:
		r.Type = typeClaim
		copy(r.Digest[:], j.Digest)
	case kind == commits.AnswerKind:
		r.Type, r.Status, r.Body = typeAnswer, j.Status, j.Body
	default:
		return record{}, fmt.Errorf("%w: %s", errPayload, kind)
	}
	if err := checkRecord(&r); err != nil {
		return record{}, err
	}
	return r, nil
}

// ClaimRiding claims (scope, key) as Claim does, but writes nothing: the
// claim becomes durable with the caller's first journal commit, which
// carries Claim.Ride's claim record, and the answer with the commit that
// ends the request, which carries its answer record; the journal reports
// both through Journaled. Until the claim record is durable the claim
// lives in this process only, so Release forgets it without a write.
// answer maps the request's outcome to its recorded answer (ok false: not
// an answer to record); onDurable, if set, runs once the claim is durable.
func (s *Store) ClaimRiding(ctx context.Context, scope, key string, digest [32]byte,
	answer func(v any, err error) (status int, body []byte, ok bool), onDurable func()) (*Claim, *Answer, error) {
	c, a, err := s.claim(ctx, &record{Type: typeClaim, Scope: scope, Key: key, Digest: digest}, true)
	if c == nil {
		return nil, a, err
	}
	c.e.onDurable = onDurable
	claimAt := c.e.claimAt
	c.ride = &commits.Ride{Claim: ClaimRecord(scope, key, digest, claimAt), Answer: func(v any, err error) json.RawMessage {
		status, body, ok := answer(v, err)
		if !ok {
			return nil
		}
		return AnswerRecord(scope, key, answerAt(s.opts.Now(), claimAt), status, body)
	}}
	return c, nil, nil
}

// ClaimRecord answers the data of the commits.ClaimKind record of a claim
// of (scope, key) with digest made at atMs (Unix milliseconds), and
// AnswerRecord that of the commits.AnswerKind record of its answer: the
// format of "Claims that ride the journal" in doc.go, which another
// Requests whose claims ride the journal (a database backend's) writes too.
func ClaimRecord(scope, key string, digest [32]byte, atMs int64) json.RawMessage {
	return marshalJournaled(&journaled{V: 1, Scope: scope, Key: []byte(key), Digest: digest[:], AtMs: atMs})
}

// AnswerRecord: see ClaimRecord.
func AnswerRecord(scope, key string, atMs int64, status int, body []byte) json.RawMessage {
	return marshalJournaled(&journaled{V: 1, Scope: scope, Key: []byte(key), AtMs: atMs, Status: status, Body: body})
}

// Ride answers what the journal commits of a ClaimRiding claim carry (nil
// for another claim).
func (c *Claim) Ride() *commits.Ride { return c.ride }

// Durable reports whether the claim is durable (a riding claim: whether
// its claim record was committed).
func (c *Claim) Durable() bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return !c.e.riding
}

// Recorded answers the answer the journal made durable for a riding
// claim, if it did.
func (c *Claim) Recorded() (Answer, bool) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if !c.e.journaledAnswer {
		return Answer{}, false
	}
	return Answer{Status: c.e.answer.Status, Body: c.e.answer.Body}, true
}

// Journaled folds a claim or answer record (commits.ClaimKind,
// commits.AnswerKind) that the journal has made durable, and writes its
// requests.log frame without waiting for a flush: SyncJournaled, which
// the journal calls before it retires the log files holding the record,
// makes the frame durable. Other kinds are ignored. It is called by the
// journal's writer and does not wait for the disk.
func (s *Store) Journaled(kind string, data []byte) error {
	if kind != commits.ClaimKind && kind != commits.AnswerKind {
		return nil
	}
	r, err := decodeJournaled(kind, data)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.lost = true
		return ErrLost
	}
	var onDurable func()
	if !s.foldJournaledLocked(&r, &onDurable) {
		return nil
	}
	if s.err == nil {
		// The frame is held and written with others (writeLocked,
		// SyncJournaled, Close): the journal's commit log holds the
		// record durably until SyncJournaled. A failed write leaves the
		// entry in memory: the rewrite that recovers from the failure
		// writes it.
		s.pend = appendFrame(s.pend, &r)
		if len(s.pend) >= pendFlushBytes {
			_, _ = s.flushPendLocked()
		}
	}
	if onDurable != nil {
		onDurable()
	}
	return nil
}

// foldJournaledLocked folds a journaled record into the entries and
// reports whether the file lacks it.
func (s *Store) foldJournaledLocked(r *record, onDurable *func()) bool {
	k := entryKey{r.Scope, r.Key}
	e := s.entries[k]
	switch r.Type {
	case typeClaim:
		if e != nil && e.digest == r.Digest && e.claimAt == r.AtMs {
			if !e.riding {
				return false // already folded
			}
			e.riding = false
			*onDurable, e.onDurable = e.onDurable, nil
			return true
		}
		if e != nil && e.done != nil {
			// A request of this process holds the key; the journal's
			// claim is older and was given up (its commit failed).
			return false
		}
		s.entries[k] = &entry{digest: r.Digest, atMs: r.AtMs, claimAt: r.AtMs}
		return true
	case typeAnswer:
		if e == nil || e.answered || e.riding || r.AtMs < e.claimAt {
			return false
		}
		e.answered, e.journaledAnswer = true, true
		e.answer, e.atMs, e.hint = Answer{Status: r.Status, Body: append([]byte(nil), r.Body...)}, r.AtMs, nil
		return true
	}
	return false
}

// SyncJournaled writes the frames Journaled holds and makes every frame
// it folded durable; the journal
// calls it before it retires log files. It compacts the file when the
// file has grown past the threshold of "Compaction" in doc.go (the
// rewrite then is the flush). After a failed write it recovers
// first (see "Write failures" in doc.go) and answers the failure while
// that does not succeed; after Close it answers ErrLost if records
// arrived meanwhile.
func (s *Store) SyncJournaled() error {
	s.mu.Lock()
	if s.closed {
		defer s.mu.Unlock()
		if s.lost {
			return ErrLost
		}
		return nil
	}
	if err := s.usableLocked(nil); err != nil {
		s.mu.Unlock()
		return err
	}
	n, err := s.flushPendLocked()
	if err == nil {
		// Records that ride the journal make the file grow without an
		// answer or release of its own, which would weigh a compaction:
		// it is weighed here, at the journal's sync point, after the
		// commits that carried them were acknowledged. A compaction
		// makes every frame durable, as the flush below would.
		s.maybeCompactLocked(nil)
		err = s.err
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.waitSync(n)
}

// JournaledRecord is a claim or answer record a journal replay found.
type JournaledRecord struct {
	Kind string
	Data []byte
}

// RecoverJournaled makes the claim and answer records among recs durable
// in the requests log at path (which need not be open, and must not be
// open elsewhere): the journal hands them over when it replays its commit
// log at open, before it retires the log files, so that records whose
// frames Journaled held or wrote but a crash lost are not lost with the
// logs.
// Records the file already holds are left alone. Hinted claims are not
// settled here (Open does that).
func RecoverJournaled(path string, recs []JournaledRecord) error {
	if len(recs) == 0 {
		return nil
	}
	s, err := openStore(path, nil, false)
	if err != nil {
		return err
	}
	for _, jr := range recs {
		if jr.Kind != commits.ClaimKind && jr.Kind != commits.AnswerKind {
			continue
		}
		r, err := decodeJournaled(jr.Kind, jr.Data)
		if err != nil {
			s.f.Close()
			return fmt.Errorf("%w: %s: journal record: %w", ErrDamaged, path, err)
		}
		var ignored func()
		if s.foldJournaledLocked(&r, &ignored) {
			if _, err := s.writeLocked(&r); err != nil {
				s.f.Close()
				return err
			}
		}
	}
	if err := s.waitSync(s.written); err != nil {
		s.f.Close()
		return err
	}
	return s.f.Close()
}

// answerAt answers the at_ms of an answer recorded now to a claim made at
// claimAt: never below claimAt, so that a wall clock stepped back between
// the two does not stamp the answer before its claim (an answer record
// older than the claim it meets is another claim's, and is not folded).
func answerAt(now time.Time, claimAt int64) int64 {
	return max(now.UnixMilli(), claimAt)
}
