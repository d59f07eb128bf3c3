package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// Operation runs a claimed request and answers its status and JSON body
// (nil for none), or an error answered as an ApiError. An error wrapping
// session.ErrBusy, session.ErrClosed or session.ErrInvalid means the
// operation was refused before it ran: the claim is released and the key
// stays unused.
type Operation func(ctx context.Context) (status int, body any, err error)

// idempotencyKey answers the request's Idempotency-Key or the 400 for a
// missing, oversize or repeated one: of two keys, neither may be chosen
// silently.
func idempotencyKey(r *http.Request) (string, error) {
	ks := r.Header["Idempotency-Key"]
	if len(ks) > 1 {
		return "", errKeyTwice
	}
	if len(ks) == 0 || len(ks[0]) == 0 || len(ks[0]) > idem.MaxKeyBytes {
		return "", errKey
	}
	return ks[0], nil
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
// the hint, so it is recorded with AnswerDerivable and sent at once. Only
// a store that cannot ride the journal (not an idem.Rider) needs it.
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
	admitted := s.admit()
	if !admitted && scope == ScopeCancel {
		// An interrupt stops work rather than adding any: it still
		// reaches the turns a drain waits for.
		admitted = s.admitStop()
	}
	if !admitted {
		WriteError(w, errDraining)
		return
	}
	defer s.done()
	digest := idem.Digest([]byte(scope), []byte(r.Method), []byte(r.URL.Path), body)
	stats, tally := s.counter(scope)
	ctx := commits.With(r.Context(), tally)
	var claim idem.Claimed
	var riding idem.RidingClaim
	var replay *idem.Answer
	rider, canRide := s.opts.Requests.(idem.Rider)
	switch {
	case canRide && (scope == ScopeSendSync || scope == ScopeSendAsync):
		// The claim and the answer ride the turn's journal commits: a
		// synchronous send's claim its first commit and its answer its
		// end; an async submission's claim and answer (the turn_started
		// sequence) the commit of turn_started.
		var onDurable func()
		if s.opts.AfterClaim != nil {
			onDurable = func() { s.opts.AfterClaim(scope, key) }
		}
		ok := http.StatusOK
		if scope == ScopeSendAsync {
			ok = http.StatusAccepted
		}
		riding, replay, err = rider.ClaimRiding(ctx, scope, key, digest, func(v any, err error) (int, []byte, bool) {
			o := s.outcome(scope, ok, v, err, nil, false)
			return o.status, o.raw, o.do == doAnswer
		}, onDurable)
		if riding != nil {
			claim = riding
			ctx = commits.WithRide(ctx, riding.Ride())
		}
	case h != nil:
		claim, replay, err = s.opts.Requests.ClaimHinted(ctx, scope, key, digest, h.hint)
	default:
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
	if s.opts.AfterClaim != nil && riding == nil {
		s.opts.AfterClaim(scope, key)
	}
	status, v, err := op(context.WithoutCancel(ctx))
	o := s.outcome(scope, status, v, err, h, true)
	if riding != nil && !riding.Durable() && (o.do == doAbandon || errors.Is(err, journal.ErrOverloaded) && !session.TurnFailed(err)) {
		// Nothing durable holds the claim (the commit that would have
		// carried it failed, or was refused for lack of resources):
		// nothing ran, and the key stays usable.
		o.do = doRelease
	}
	switch o.do {
	case doRelease:
		if rerr := claim.Release(); rerr != nil {
			s.log.Error("idempotency release", "scope", scope, "err", rerr)
		}
		WriteError(w, err)
		return
	case doAbandon:
		claim.Abandon()
		s.log.Error("operation failed on a journal write; its idempotency key stays ambiguous", "scope", scope, "err", err)
		if errors.Is(err, journal.ErrOverloaded) {
			// Storage stopped answering (a commit of unknown outcome):
			// this answer is 503, and the key answers ambiguous from now
			// on, as the 503 is not recorded.
			WriteError(w, err)
			return
		}
		WriteError(w, idem.ErrAmbiguous)
		return
	}
	if riding != nil {
		if a, ok := riding.Recorded(); ok {
			// The journal committed the answer with the turn's end: that
			// is the answer, byte for byte.
			o.status, o.raw = a.Status, a.Body
		}
	}
	record := claim.Answer
	if o.derivable {
		record = claim.AnswerDerivable
	}
	if err := record(o.status, o.raw); err != nil {
		s.log.Error("idempotency answer not recorded", "scope", scope, "err", err)
		WriteError(w, idem.ErrAmbiguous)
		return
	}
	stats.answered(tally)
	writeAnswer(w, o.status, o.raw)
}

// What an operation's outcome does with its claim.
const (
	doAnswer  = iota // record the answer and send it
	doRelease        // the operation was refused before it ran
	doAbandon        // its outcome is unknown: the key stays ambiguous
)

// refusal is an error an operation answered before it had any effect.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// refused marks err as the answer of an operation that was refused
// before it had any effect: the claim is released and the key stays
// unused.
func refused(err error) error { return refusal{err} }

type outcome struct {
	do        int
	status    int
	raw       []byte
	derivable bool
}

// outcome classifies an operation's result: the answer to record, or a
// refusal (ErrBusy, ErrClosed, ErrInvalid, ErrUnavailable, an error an
// operation marked with refused, a closed Wasm host's loophost.ErrClosed,
// a module lookup that gave up behind another admission (loophost.ErrBusy),
// and ErrOwnedElsewhere, which a cluster's node that no longer holds the
// session's lease answers before running anything: the claim is
// released) or a journal failure after the operation may have had an
// effect (journal.ErrWrite, journal.ErrOverloaded: the claim is
// abandoned; that 500 or 503 is never recorded as the key's answer).
// logged warns of a server-side failure.
func (s *Server) outcome(scope string, status int, v any, err error, h *claimHint, logged bool) outcome {
	// A turn that ran and failed (its turn_failed committed) is answered,
	// whatever refusal or fault its cause wraps: the loop's service call
	// that was refused is no refusal of the request.
	if err != nil && !session.TurnFailed(err) {
		if errors.Is(err, session.ErrBusy) || errors.Is(err, session.ErrClosed) || errors.Is(err, session.ErrInvalid) ||
			errors.Is(err, session.ErrUnavailable) || errors.Is(err, session.ErrOwnedElsewhere) || errors.Is(err, loophost.ErrClosed) ||
			errors.Is(err, loophost.ErrBusy) || errors.As(err, new(refusal)) {
			return outcome{do: doRelease}
		}
		if errors.Is(err, journal.ErrWrite) || errors.Is(err, journal.ErrOverloaded) {
			// A retryable failure of durable storage after the
			// operation began: it may have had an effect, and a 503
			// recorded as the key's answer would outlive the fault.
			return outcome{do: doAbandon}
		}
	}
	if err != nil {
		e := ErrorOf(err)
		if e.Status >= 500 && logged {
			s.log.Warn("operation failed", "scope", scope, "code", e.Body.Code, "err", err)
		}
		raw, _ := json.Marshal(e.Body)
		return outcome{status: e.Status, raw: raw}
	}
	if v == nil {
		return outcome{status: status}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		raw, _ = json.Marshal(ErrorOf(err).Body)
		return outcome{status: http.StatusInternalServerError, raw: raw}
	}
	return outcome{status: status, raw: raw, derivable: h != nil && h.derivable(status, v)}
}

// writeAnswer writes a recorded or fresh answer; a 202 is an accepted
// async submission.
func writeAnswer(w http.ResponseWriter, status int, body []byte) {
	if status == http.StatusAccepted {
		w.Header().Set("Preference-Applied", "respond-async")
	}
	writeRaw(w, status, body)
}
