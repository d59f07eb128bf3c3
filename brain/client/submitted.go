package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/brain-in-go/brain/brain/api"
)

// preferAsync is the Prefer header's value that asks Brain to answer a
// message once its turn is admitted (202 and the turn_started sequence)
// instead of once it ended (200 and the session's summary).
const preferAsync = "respond-async"

// submitted checks the body of a submission's answer: the turn_started
// sequence of a 202, the session's summary of a 200.
func submitted(r *response) error {
	if r.status != http.StatusAccepted {
		_, err := decodeSummary(r)
		return err
	}
	seq, err := decode[uint64](r)
	if err == nil && seq == 0 {
		err = fmt.Errorf("client: malformed answer: submission admitted at sequence 0")
	}
	return err
}

// firstTurnWindow is how many sequences before the end of a synchronous
// answer are read first for its turn's end; each further read goes
// turnWindowGrowth times as far back.
const (
	firstTurnWindow  = 64
	turnWindowGrowth = 16
)

// ranSynchronously answers the Receipt of a submission Brain answered
// with the session's summary after the turn ended (its request reached
// Brain without the Prefer header): the turn is the one whose end
// (turn_ended or turn_failed, which names its turn_started) is the last
// at or before the summary's last sequence, as Brain answers a
// synchronous message with the summary at its turn's end. When the
// events cannot be read, it fails with an *UncertainError carrying the
// submission's key: sent again with it, the submission is answered with
// the same summary, and runs no other turn.
func (s *Session) ranSynchronously(ctx context.Context, r *response, key string) (Receipt, error) {
	sum, err := decodeSummary(r)
	if err != nil {
		return Receipt{}, fmt.Errorf("client: submission answered %d, not 202: %w", r.status, err)
	}
	last := sum.LastSequence
	for span := min(firstTurnWindow, last); ; span = widen(span, last) {
		from := last - span
		var turn uint64
		for ev, err := range s.Events(ctx, from) {
			if err != nil {
				return Receipt{}, &UncertainError{Key: key, Err: fmt.Errorf("client: submission answered once its turn ended: finding the turn: %w", err)}
			}
			if ev.Sequence > last {
				break
			}
			if ev.EventType != api.KindTurnEnded && ev.EventType != api.KindTurnFailed {
				continue
			}
			var end struct {
				Sequence uint64 `json:"sequence"`
			}
			if err := json.Unmarshal(ev.Data, &end); err == nil && end.Sequence > 0 {
				turn = end.Sequence
			}
		}
		switch {
		case turn != 0:
			return Receipt{SessionID: s.ID, Sequence: turn}, nil
		case from == 0:
			return Receipt{}, fmt.Errorf("client: submission answered once its turn ended: session %s has no turn ended by sequence %d", s.ID, last)
		}
	}
}

// widen answers the next window, turnWindowGrowth times span, up to last.
func widen(span, last uint64) uint64 {
	if span > last/turnWindowGrowth {
		return last
	}
	return span * turnWindowGrowth
}
