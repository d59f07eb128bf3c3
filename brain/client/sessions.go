package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/brain-in-go/brain/brain/api"
)

// Sessions creates, lists and opens sessions.
type Sessions struct{ c *Client }

// Create creates a session and answers its handle. An error answer that
// quotes the request's model API key or an environment's credential has
// them redacted (see the package documentation).
func (ss *Sessions) Create(ctx context.Context, req api.CreateSessionRequest, opts ...CallOption) (*Session, error) {
	secrets := []string{req.Model.APIKey}
	for _, env := range req.Environments {
		secrets = append(secrets, env.Credential)
	}
	r, err := ss.c.do(ctx, http.MethodPost, "/v1/sessions", req, true, append(opts[:len(opts):len(opts)], answers[api.SessionSummary](), carrying(secrets...)))
	if err != nil {
		return nil, err
	}
	sum, err := decodeSummary(r)
	if err != nil {
		return nil, err
	}
	return &Session{c: ss.c, ID: sum.SessionID, Summary: sum}, nil
}

// List lists the server's sessions.
func (ss *Sessions) List(ctx context.Context) ([]api.SessionSummary, error) {
	r, err := ss.c.do(ctx, http.MethodGet, "/v1/sessions", nil, false, []CallOption{answers[api.SessionList]()})
	if err != nil {
		return nil, err
	}
	l, err := decode[api.SessionList](r)
	return l.Sessions, err
}

// Get fetches a session's summary and answers its handle.
func (ss *Sessions) Get(ctx context.Context, id string) (*Session, error) {
	s := ss.Open(id)
	if _, err := s.Refresh(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Open answers a handle of session id without asking the server.
func (ss *Sessions) Open(id string) *Session { return &Session{c: ss.c, ID: id} }

// Session is a handle of one session. Summary is the state its last call
// answered; background work does not update it (use Refresh).
type Session struct {
	c       *Client
	ID      string
	Summary api.SessionSummary
}

// Receipt is the answer of Submit: the turn_started record of the admitted
// turn.
type Receipt struct {
	SessionID string
	Sequence  uint64
}

// path is the session's route with suffix; the id is escaped, so that an
// id holding "/", "?" or ".." names no other route.
func (s *Session) path(suffix string) string {
	return "/v1/sessions/" + segment(s.ID) + suffix
}

// Refresh fetches the session's summary.
func (s *Session) Refresh(ctx context.Context) (api.SessionSummary, error) {
	r, err := s.c.do(ctx, http.MethodGet, s.path(""), nil, false, []CallOption{answers[api.SessionSummary]()})
	if err != nil {
		return api.SessionSummary{}, err
	}
	sum, err := decodeSummary(r)
	if err == nil {
		s.Summary = sum
	}
	return sum, err
}

// Send runs a turn and waits for it to end. A failed turn answers an
// *api.ApiError with the turn's failure code.
//
// When ctx can be cancelled, Send owns the turn it starts: it submits the
// turn and follows the session's events until the turn ends. Cancelling
// ctx never abandons a turn half-admitted: Send first waits for the
// turn's admission, then interrupts the session and waits until the
// interrupt is accepted, and only then returns ctx's error. From then on
// the session's loop dispatches no further tool. Use a handle of its own
// for a session owned this way (such as a child session of a host tool
// that passes its handler's ctx), and do not send through other owners
// concurrently. An IdempotencyKey then keys the submission; when the turn
// was admitted and its end cannot be learnt (its events or the summary
// cannot be read), Send fails with an *UncertainError carrying the
// submission's key, and Send again with that key follows the same turn.
//
// A submission and a synchronous send have separate idempotency scopes:
// retry an uncertain Send with the same key and a ctx of the same kind
// (one that can be cancelled, or one that cannot). The same key through
// the other kind is a new request and starts another turn.
func (s *Session) Send(ctx context.Context, input api.UserInput, opts ...CallOption) (api.SessionSummary, error) {
	if ctx.Done() != nil {
		return s.sendOwned(ctx, input, opts)
	}
	r, err := s.c.do(ctx, http.MethodPost, s.path("/messages"), api.MessageRequest{Input: input}, true, append(opts[:len(opts):len(opts)], answers[api.SessionSummary]()))
	if err != nil {
		return api.SessionSummary{}, err
	}
	sum, err := decodeSummary(r)
	if err == nil {
		s.Summary = sum
	}
	return sum, err
}

func (s *Session) sendOwned(ctx context.Context, input api.UserInput, opts []CallOption) (api.SessionSummary, error) {
	if err := ctx.Err(); err != nil {
		return api.SessionSummary{}, context.Cause(ctx)
	}
	// The submission has a key of its own choosing or the caller's: once
	// it is admitted, a turn whose end cannot be learnt fails with an
	// UncertainError carrying it.
	var co call
	for _, o := range opts {
		o(&co)
	}
	key := co.key
	if key == "" {
		key = newKey()
		opts = append(opts[:len(opts):len(opts)], IdempotencyKey(key))
	}
	unknown := func(err error) error {
		var ue *UncertainError
		if errors.As(err, &ue) {
			return err
		}
		return &UncertainError{Key: key, Err: err}
	}
	// The submission and the interrupt run to their answer even when ctx
	// ends meanwhile; only closing the client stops them.
	detached := context.WithoutCancel(ctx)
	rec, err := s.Submit(detached, input, opts...)
	if err != nil {
		return api.SessionSummary{}, err
	}
	type ended struct {
		ev  api.Event
		err error
	}
	fctx, stop := context.WithCancel(detached)
	defer stop()
	done := make(chan ended, 1)
	go func() {
		for ev, err := range s.Events(fctx, rec.Sequence, Follow()) {
			if err != nil {
				done <- ended{err: err}
				return
			}
			if ev.EventType == api.KindTurnEnded || ev.EventType == api.KindTurnFailed {
				done <- ended{ev: ev}
				return
			}
		}
		done <- ended{err: fmt.Errorf("client: session %s ended before turn %d did: %w", s.ID, rec.Sequence, errStreamEnded)}
	}()
	var r ended
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done:
			// The turn ended as ctx did: it is answered, not interrupted.
		default:
			if err := s.Interrupt(detached); err != nil {
				return api.SessionSummary{}, errors.Join(context.Cause(ctx), fmt.Errorf("client: interrupting turn %d: %w", rec.Sequence, err))
			}
			return api.SessionSummary{}, context.Cause(ctx)
		}
	}
	if r.err != nil {
		return api.SessionSummary{}, unknown(r.err)
	}
	if r.ev.EventType == api.KindTurnFailed {
		var f api.Failure
		if err := json.Unmarshal(r.ev.Data, &f); err != nil || f.Code == "" {
			return api.SessionSummary{}, fmt.Errorf("client: turn %d failed with an unreadable failure: %s", rec.Sequence, r.ev.Data)
		}
		msg := f.Message
		if msg == "" {
			msg = f.Code
		}
		return api.SessionSummary{}, &api.ApiError{Code: f.Code, Message: msg, Retryable: f.Retryable, Details: f.Details}
	}
	sum, err := s.Refresh(detached)
	if err != nil {
		return api.SessionSummary{}, unknown(err)
	}
	return sum, nil
}

// Submit admits a turn without waiting for it: it answers once
// turn_started is durable. A busy session answers an *api.ApiError with
// code conflict and details {"admission":"rejected"}; the key is not
// consumed and may be retried.
//
// Submit asks for the asynchronous answer with the header Prefer:
// respond-async. Brain runs a message whose request lacks it (a proxy in
// front of Brain that drops the header) as Send does, and answers once
// the turn ended: Submit then answers, after the turn's end, the Receipt
// of that turn, which it finds among the session's events (an
// *UncertainError carrying the key when they cannot be read), and a turn
// that failed fails Submit with the turn's failure code, as it fails
// Send.
func (s *Session) Submit(ctx context.Context, input api.UserInput, opts ...CallOption) (Receipt, error) {
	var co call
	for _, o := range opts {
		o(&co)
	}
	key := co.key
	opts = append(opts[:len(opts):len(opts)], func(c *call) {
		if c.header == nil {
			c.header = http.Header{}
		}
		c.header.Set("Prefer", preferAsync)
	}, expect(http.StatusAccepted, http.StatusOK), func(c *call) { c.check = submitted })
	if key == "" {
		key = newKey()
		opts = append(opts, IdempotencyKey(key))
	}
	r, err := s.c.do(ctx, http.MethodPost, s.path("/messages"), api.MessageRequest{Input: input}, true, opts)
	if err != nil {
		return Receipt{}, err
	}
	if r.status != http.StatusAccepted {
		return s.ranSynchronously(ctx, r, key)
	}
	seq, err := decode[uint64](r)
	if err == nil && seq == 0 {
		err = fmt.Errorf("client: malformed answer: submission admitted at sequence 0")
	}
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{SessionID: s.ID, Sequence: seq}, nil
}

// Transcript reads the saved messages; it works while the session is
// suspended and does not activate it.
func (s *Session) Transcript(ctx context.Context) (api.SessionTranscript, error) {
	r, err := s.c.do(ctx, http.MethodGet, s.path("/transcript"), nil, false, []CallOption{answers[api.SessionTranscript]()})
	if err != nil {
		return api.SessionTranscript{}, err
	}
	return decode[api.SessionTranscript](r)
}

// TranscriptPart reads part of the saved messages: at most limit
// (0..api.MaxTranscriptPart) of them, from the one at place from (from
// 0). The answer says how many messages the transcript holds (Total) and
// the place of the first one it returns (Offset); past the end it
// returns none.
func (s *Session) TranscriptPart(ctx context.Context, from, limit int) (api.TranscriptPart, error) {
	if from < 0 || limit < 0 || limit > api.MaxTranscriptPart {
		return api.TranscriptPart{}, fmt.Errorf("client: transcript part from %d, limit %d: want from ≥ 0 and limit 0..%d", from, limit, api.MaxTranscriptPart)
	}
	return s.transcriptPart(ctx, "from="+strconv.Itoa(from)+"&limit="+strconv.Itoa(limit))
}

// TranscriptTail reads the newest n (0..api.MaxTranscriptPart) saved
// messages, with the transcript's Total and the Offset of the first one.
func (s *Session) TranscriptTail(ctx context.Context, n int) (api.TranscriptPart, error) {
	if n < 0 || n > api.MaxTranscriptPart {
		return api.TranscriptPart{}, fmt.Errorf("client: transcript tail %d: want 0..%d", n, api.MaxTranscriptPart)
	}
	return s.transcriptPart(ctx, "tail="+strconv.Itoa(n))
}

func (s *Session) transcriptPart(ctx context.Context, query string) (api.TranscriptPart, error) {
	r, err := s.c.do(ctx, http.MethodGet, s.path("/transcript?"+query), nil, false, []CallOption{answers[api.TranscriptPart]("total", "offset")})
	if err != nil {
		return api.TranscriptPart{}, err
	}
	return decode[api.TranscriptPart](r)
}

// Interrupt cancels work in flight; the session stays usable. No
// automatic activation (a background tool's result, an environment's
// observation) starts until the next message, also after the session is
// passivated or the server restarts.
func (s *Session) Interrupt(ctx context.Context, opts ...CallOption) error {
	_, err := s.c.do(ctx, http.MethodPost, s.path("/cancel"), nil, true, append(opts[:len(opts):len(opts)], expect(http.StatusNoContent)))
	return err
}

// End ends the session: no new messages, environments detached, history
// kept.
func (s *Session) End(ctx context.Context, opts ...CallOption) (api.SessionSummary, error) {
	r, err := s.c.do(ctx, http.MethodPost, s.path("/end"), nil, true, append(opts[:len(opts):len(opts)], answers[api.SessionSummary]()))
	if err != nil {
		return api.SessionSummary{}, err
	}
	sum, err := decodeSummary(r)
	if err == nil {
		s.Summary = sum
	}
	return sum, err
}

// Delete removes an ended or failed session and its credentials.
func (s *Session) Delete(ctx context.Context, opts ...CallOption) error {
	_, err := s.c.do(ctx, http.MethodDelete, s.path(""), nil, true, append(opts[:len(opts):len(opts)], expect(http.StatusNoContent)))
	return err
}
