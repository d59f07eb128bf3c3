package pgstore

import (
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// rideClaim registers a riding claim's claim record.
func (j *Journal) rideClaim(c *RequestClaim) {
	j.ridesMu.Lock()
	defer j.ridesMu.Unlock()
	j.rides[string(c.ride.claimData)] = c
}

// rideAnswer registers the answer record data of riding claim c, for
// answer a.
func (j *Journal) rideAnswer(c *RequestClaim, data []byte, a idem.Answer) {
	j.ridesMu.Lock()
	defer j.ridesMu.Unlock()
	if c.ride.answerData != nil {
		delete(j.rides, string(c.ride.answerData))
	}
	c.ride.answerData, c.ride.answer = data, a
	j.rides[string(data)] = c
}

// rideDone forgets a finished riding claim's records.
func (j *Journal) rideDone(c *RequestClaim) {
	j.ridesMu.Lock()
	defer j.ridesMu.Unlock()
	for _, d := range []json.RawMessage{c.ride.claimData, c.ride.answerData} {
		if d != nil && j.rides[string(d)] == c {
			delete(j.rides, string(d))
		}
	}
}

// ridesOf answers the riding claims and answers whose records are among
// records.
func (j *Journal) ridesOf(records []journal.Record) ([]rideWrite, error) {
	var out []rideWrite
	for i := range records {
		k := records[i].Kind
		if k != commits.ClaimKind && k != commits.AnswerKind {
			continue
		}
		j.ridesMu.Lock()
		c := j.rides[string(records[i].Data)]
		j.ridesMu.Unlock()
		if c == nil {
			// Its row could not be written with it.
			return nil, fmt.Errorf("%w: a %s record of no running claim of this process", journal.ErrInvalid, k)
		}
		out = append(out, rideWrite{c: c, answer: k == commits.AnswerKind})
	}
	return out, nil
}

// rode moves the riding claims of an append on: committed (ok) or its
// outcome unknown.
func (j *Journal) rode(a *appendOp, ok bool) {
	j.ridesMu.Lock()
	var durable []func()
	for _, w := range a.rides {
		r := w.c.ride
		switch {
		case !ok:
			if !w.answer && r.state == rideNew {
				r.state = rideUnknown
			}
		case w.answer:
			r.answered = a.wroteAnswer(w.c)
		default:
			if r.state != rideDurable && r.onDurable != nil {
				durable = append(durable, r.onDurable)
			}
			r.state = rideDurable
		}
	}
	j.ridesMu.Unlock()
	for _, f := range durable {
		f()
	}
}

// errKeyTaken: a riding claim's row could not be inserted because another
// request claimed the key after this one read it free; nothing of the
// append committed.
var errKeyTaken = fmt.Errorf("pgstore: the idempotency key was claimed by another request meanwhile: %w", ErrUnavailable)
