package httpapi

import (
	"context"
	"encoding/binary"
	"strconv"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// gate orders the requests of one session that can commit a turn_started
// record or remove the session's records (sends and deletes) around an
// async submission while its claim is unsettled; see the idem package
// documentation for why a hinted one needs it. (A submission whose claim
// and answer ride the journal takes the same place in the gate.)
type gate struct {
	refs     int
	inEngine int           // sends and deletes between entering and leaving
	hinted   chan struct{} // open while a hinted submission runs
}

// enterGate waits until no hinted submission of session id runs. With
// wantHint and no other send or delete of the session in flight, the
// caller becomes the session's hinted submission; otherwise it is counted
// as in flight. Every successful enterGate is followed by one leaveGate.
func (s *Server) enterGate(ctx context.Context, id string, wantHint bool) (g *gate, hinted bool, err error) {
	s.gmu.Lock()
	g = s.gates[id]
	if g == nil {
		g = &gate{}
		s.gates[id] = g
	}
	g.refs++
	for g.hinted != nil {
		ch := g.hinted
		s.gmu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.gmu.Lock()
			s.dropGateLocked(id, g)
			s.gmu.Unlock()
			return nil, false, ctx.Err()
		}
		s.gmu.Lock()
	}
	if wantHint && g.inEngine == 0 {
		g.hinted = make(chan struct{})
		hinted = true
	} else {
		g.inEngine++
	}
	s.gmu.Unlock()
	return g, hinted, nil
}

func (s *Server) leaveGate(id string, g *gate, hinted bool) {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	if hinted {
		close(g.hinted)
		g.hinted = nil
	} else {
		g.inEngine--
	}
	s.dropGateLocked(id, g)
}

func (s *Server) dropGateLocked(id string, g *gate) {
	g.refs--
	if g.refs == 0 {
		delete(s.gates, id)
	}
}

// Hints of async submissions: version 1, the session's next journal
// sequence when the claim was made (uint64, little-endian), the session
// id.
const hintVersion = 1

func submitHint(id string, next uint64) []byte {
	h := make([]byte, 0, 9+len(id))
	h = append(h, hintVersion)
	h = binary.LittleEndian.AppendUint64(h, next)
	return append(h, id...)
}

func parseHint(h []byte) (id string, next uint64, ok bool) {
	if len(h) < 10 || h[0] != hintVersion {
		return "", 0, false
	}
	return string(h[9:]), binary.LittleEndian.Uint64(h[1:]), true
}

// asyncAnswer is the recorded answer of an accepted async submission.
func asyncAnswer(seq uint64) []byte { return strconv.AppendUint(nil, seq, 10) }

// Derive answers the idem.Options.Derive of a data directory served by
// engine: a hinted async submission whose process ended before its answer
// was durable was accepted, with that answer, exactly when the session's
// journal holds a turn_started record at or after the sequence in the
// hint; the first such record is the submission's. Call it before the
// server admits requests.
func Derive(engine *session.Engine) func(scope, key string, hint []byte) (idem.Answer, bool) {
	return func(scope, _ string, hint []byte) (idem.Answer, bool) {
		id, next, ok := parseHint(hint)
		if scope != ScopeSendAsync || !ok || next == 0 {
			return idem.Answer{}, false
		}
		ctx := context.Background()
		after := next - 1
		for {
			page, err := engine.Events(ctx, id, after)
			if err != nil || len(page.Events) == 0 {
				return idem.Answer{}, false
			}
			for _, ev := range page.Events {
				if ev.EventType == api.KindTurnStarted && ev.Sequence >= next {
					return idem.Answer{Status: 202, Body: asyncAnswer(ev.Sequence)}, true
				}
			}
			if page.NextCursor <= after {
				return idem.Answer{}, false
			}
			after = page.NextCursor
		}
	}
}

// nextSequence answers the sequence session id's next record will get.
func (s *Server) nextSequence(ctx context.Context, id string) (uint64, error) {
	if s.opts.NextSequence != nil {
		return s.opts.NextSequence(ctx, id)
	}
	sum, err := s.opts.Engine.Summary(ctx, id)
	if err != nil {
		return 0, err
	}
	return sum.LastSequence + 1, nil
}
