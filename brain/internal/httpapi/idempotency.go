package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// Operation runs a claimed request and answers its status and JSON body
// (nil for none), or an error answered as an ApiError. An error wrapping
// session.ErrBusy, session.ErrClosed or session.ErrInvalid means the
// operation was refused before it ran: the claim is released and the key
// stays unused.
type Operation func(ctx context.Context) (status int, body any, err error)

// idempotencyKey answers the request's Idempotency-Key or the 400 for a
// missing or oversize one.
func idempotencyKey(r *http.Request) (string, error) {
	k := r.Header.Get("Idempotency-Key")
	if len(k) == 0 || len(k) > idem.MaxKeyBytes {
		return "", errKey
	}
	return k, nil
}

// Idempotent runs op under the Idempotency-Key protocol for operation scope:
// the request (method, path and body) is digested, the key is durably
// claimed, op runs once with a context that outlives the client, and its
// answer is durably recorded before it is written. Callers validate the
// request first, so that refused requests do not consume keys.
func (s *Server) Idempotent(w http.ResponseWriter, r *http.Request, scope string, body []byte, op Operation) {
	s.idempotent(w, r, scope, body, nil, op)
}

// claimHint makes a claim hinted (idem.Store.ClaimHinted): when derivable
// accepts an operation's answer, that answer is the one Derive finds from
// the hint, so it is recorded with AnswerDerivable and sent at once.
type claimHint struct {
	hint      []byte
	derivable func(status int, v any) bool
}

func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, scope string, body []byte, h *claimHint, op Operation) {
	key, err := idempotencyKey(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	if !s.admit() {
		WriteError(w, errDraining)
		return
	}
	defer s.done()
	digest := idem.Digest([]byte(scope), []byte(r.Method), []byte(r.URL.Path), body)
	stats, tally := s.counter(scope)
	ctx := commits.With(r.Context(), tally)
	var claim idem.Claimed
	var replay *idem.Answer
	if h != nil {
		claim, replay, err = s.opts.Requests.ClaimHinted(ctx, scope, key, digest, h.hint)
	} else {
		claim, replay, err = s.opts.Requests.Claim(ctx, scope, key, digest)
	}
	if err != nil {
		WriteError(w, err)
		return
	}
	if replay != nil {
		s.observer().IdempotencyHit()
		writeAnswer(w, replay.Status, replay.Body)
		return
	}
	if s.opts.AfterClaim != nil {
		s.opts.AfterClaim(scope, key)
	}
	status, v, err := op(context.WithoutCancel(ctx))
	var raw []byte
	derivable := false
	if err != nil {
		if errors.Is(err, session.ErrBusy) || errors.Is(err, session.ErrClosed) || errors.Is(err, session.ErrInvalid) ||
			errors.Is(err, session.ErrUnavailable) {
			if rerr := claim.Release(); rerr != nil {
				s.log.Error("idempotency release", "scope", scope, "err", rerr)
			}
			WriteError(w, err)
			return
		}
		if errors.Is(err, journal.ErrWrite) {
			// Durable storage failed after the operation may have had an
			// effect: its outcome is unknown. That 500 is never recorded
			// as the key's answer; the key stays ambiguous.
			claim.Abandon()
			s.log.Error("operation failed on a journal write; its idempotency key stays ambiguous", "scope", scope, "err", err)
			WriteError(w, idem.ErrAmbiguous)
			return
		}
		e := ErrorOf(err)
		if e.Status >= 500 {
			s.log.Warn("operation failed", "scope", scope, "code", e.Body.Code, "err", err)
		}
		status = e.Status
		raw, _ = json.Marshal(e.Body)
	} else if v != nil {
		if raw, err = json.Marshal(v); err != nil {
			raw, _ = json.Marshal(ErrorOf(err).Body)
			status = http.StatusInternalServerError
		} else {
			derivable = h != nil && h.derivable(status, v)
		}
	}
	record := claim.Answer
	if derivable {
		record = claim.AnswerDerivable
	}
	if err := record(status, raw); err != nil {
		s.log.Error("idempotency answer not recorded", "scope", scope, "err", err)
		WriteError(w, idem.ErrAmbiguous)
		return
	}
	stats.answered(tally)
	writeAnswer(w, status, raw)
}

// writeAnswer writes a recorded or fresh answer; a 202 is an accepted
// async submission.
func writeAnswer(w http.ResponseWriter, status int, body []byte) {
	if status == http.StatusAccepted {
		w.Header().Set("Preference-Applied", "respond-async")
	}
	writeRaw(w, status, body)
}
