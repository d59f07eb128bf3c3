package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// refMinBytes is the encoded size from which a message a transcript_delta
// appends is written as a reference to the earlier record that holds it
// instead of as a copy.
const refMinBytes = 1024

// messageRef stands for one appended message of a pure-append delta (a
// transcript_delta or a model_call_started context): the message at
// position At of the appended tail is the one at Path of record Sequence,
// an earlier turn_started ("input", its user message),
// model_call_started ("context.delta.append.{i}", of the resolved tail)
// or model_call_ended ("result.message") of the same turn or activation.
// A delta that replaces a tail (public as transcript_replaced) never holds
// references; a model_call_started is projected with its references
// resolved (see Engine.expand).
type messageRef struct {
	At       int    `json:"at"`
	Sequence uint64 `json:"sequence"`
	Path     string `json:"path"`
}

// heldMessage is a large message a committed model call record holds,
// kept by the fold until the next transcript_delta or the end of the
// activation so that a delta can refer to it.
type heldMessage struct {
	ref messageRef
	sum [sha256.Size]byte
	msg api.Message
}

// holdMessages notes the large messages of a model call record.
func (st *state) holdMessages(r journal.Record) {
	if len(r.Data) < refMinBytes {
		return
	}
	switch r.Kind {
	case api.KindModelCallStarted:
		var m modelCallStarted
		if json.Unmarshal(r.Data, &m) != nil {
			return
		}
		app, err := st.appended(r.Sequence, m.Context.Delta)
		if err != nil {
			return
		}
		for i, msg := range app {
			st.hold(r.Sequence, "context.delta.append."+strconv.Itoa(i), msg)
		}
	case api.KindModelCallEnded:
		var m modelCallEnded
		if json.Unmarshal(r.Data, &m) != nil {
			return
		}
		st.hold(r.Sequence, "result.message", m.Result.Message)
	}
}

func (st *state) hold(seq uint64, path string, msg api.Message) {
	b, err := json.Marshal(msg)
	if err != nil || len(b) < refMinBytes {
		return
	}
	st.held = append(st.held, heldMessage{ref: messageRef{Sequence: seq, Path: path}, sum: sha256.Sum256(b), msg: msg})
}

// deltaByRef is delta, with each large appended message that a held model
// call record already holds written as a reference to it.
func (st *state) deltaByRef(saved, next []api.Message) transcriptDelta {
	d := delta(saved, next)
	if d.Keep < d.Saved || len(st.held) == 0 {
		return d
	}
	kept := d.Append[:0:0]
	for i, msg := range d.Append {
		if r, ok := st.find(msg); ok {
			r.At = i
			d.Refs = append(d.Refs, r)
			continue
		}
		kept = append(kept, msg)
	}
	if len(d.Refs) > 0 {
		d.Append = kept
	}
	return d
}

func (st *state) find(msg api.Message) (messageRef, bool) {
	b, err := json.Marshal(msg)
	if err != nil || len(b) < refMinBytes {
		return messageRef{}, false
	}
	sum := sha256.Sum256(b)
	for _, h := range st.held {
		if h.sum == sum {
			return h.ref, true
		}
	}
	return messageRef{}, false
}

// appended answers the messages a delta appends, its references resolved
// from the held messages or, when the fold did not see the referenced
// record (it started from a checkpoint after it), from the journal.
func (st *state) appended(seq uint64, d transcriptDelta) ([]api.Message, error) {
	if len(d.Refs) == 0 {
		return d.Append, nil
	}
	n := len(d.Append) + len(d.Refs)
	out := make([]api.Message, n)
	filled := make([]bool, n)
	for _, r := range d.Refs {
		if r.At < 0 || r.At >= n || filled[r.At] || r.Sequence == 0 || r.Sequence >= seq {
			return nil, fmt.Errorf("session: record %d: reference %+v: %w", seq, r, ErrInvalid)
		}
		msg, err := st.resolve(r)
		if err != nil {
			return nil, fmt.Errorf("session: record %d: %w", seq, err)
		}
		out[r.At], filled[r.At] = msg, true
	}
	j := 0
	for i := range out {
		if !filled[i] {
			out[i] = d.Append[j]
			j++
		}
	}
	return out, nil
}

func (st *state) resolve(r messageRef) (api.Message, error) {
	for _, h := range st.held {
		if h.ref.Sequence == r.Sequence && h.ref.Path == r.Path {
			return h.msg, nil
		}
	}
	if st.lookup == nil {
		return api.Message{}, fmt.Errorf("reference to record %d: %w", r.Sequence, ErrInvalid)
	}
	rec, err := st.lookup(r.Sequence)
	if err != nil {
		return api.Message{}, fmt.Errorf("reference to record %d: %w", r.Sequence, err)
	}
	switch {
	case rec.Kind == api.KindTurnStarted && r.Path == "input":
		var t turnStarted
		if err := json.Unmarshal(rec.Data, &t); err != nil {
			return api.Message{}, fmt.Errorf("reference to record %d: %w", r.Sequence, err)
		}
		return api.UserMessage(t.Input), nil
	case rec.Kind == api.KindModelCallEnded && r.Path == "result.message":
		var m modelCallEnded
		if err := json.Unmarshal(rec.Data, &m); err != nil {
			return api.Message{}, fmt.Errorf("reference to record %d: %w", r.Sequence, err)
		}
		return m.Result.Message, nil
	case rec.Kind == api.KindModelCallStarted && strings.HasPrefix(r.Path, "context.delta.append."):
		i, err := strconv.Atoi(strings.TrimPrefix(r.Path, "context.delta.append."))
		var m modelCallStarted
		if err == nil {
			err = json.Unmarshal(rec.Data, &m)
		}
		var app []api.Message
		if err == nil {
			app, err = (&state{lookup: st.lookup}).appended(rec.Sequence, m.Context.Delta)
		}
		if err != nil || i < 0 || i >= len(app) {
			return api.Message{}, fmt.Errorf("reference %s of record %d: %w", r.Path, r.Sequence, ErrInvalid)
		}
		return app[i], nil
	}
	return api.Message{}, fmt.Errorf("reference %s of record %d (%s): %w", r.Path, r.Sequence, rec.Kind, ErrInvalid)
}

// journalLookup reads single records of session id for the fold.
func (e *Engine) journalLookup(id string) func(uint64) (journal.Record, error) {
	return func(seq uint64) (journal.Record, error) {
		recs, err := e.store.Read(context.WithoutCancel(e.base), id, seq-1, 1, 0)
		if err != nil {
			return journal.Record{}, err
		}
		if len(recs) != 1 || recs[0].Sequence != seq {
			return journal.Record{}, fmt.Errorf("record %d: %w", seq, journal.ErrNotFound)
		}
		return recs[0], nil
	}
}

// holdInput notes the user message of a large turn_started.
func (st *state) holdInput(r journal.Record) {
	if len(r.Data) < refMinBytes {
		return
	}
	var t turnStarted
	if json.Unmarshal(r.Data, &t) == nil {
		st.hold(r.Sequence, "input", api.UserMessage(t.Input))
	}
}

// expand answers r with the references of its model_call_started context
// resolved, as the record was before the references were written: the
// public event of a model call always holds its whole request delta.
func (e *Engine) expand(id string, r journal.Record) (journal.Record, error) {
	if r.Kind != api.KindModelCallStarted || len(r.Data) == 0 || !bytes.Contains(r.Data, []byte(`"refs":`)) {
		return r, nil
	}
	var m modelCallStarted
	if err := json.Unmarshal(r.Data, &m); err != nil || len(m.Context.Delta.Refs) == 0 {
		return r, nil
	}
	st := &state{lookup: e.journalLookup(id)}
	app, err := st.appended(r.Sequence, m.Context.Delta)
	if err != nil {
		return r, err
	}
	m.Context.Delta.Append, m.Context.Delta.Refs = app, nil
	b, err := json.Marshal(m)
	if err != nil {
		return r, fmt.Errorf("session: record %d: %w", r.Sequence, err)
	}
	r.Data = b
	return r, nil
}

// project is Project after expand. A reference that cannot be resolved
// projects the record as it is (its refs visible) rather than hiding it.
func (e *Engine) project(id string, r journal.Record) (api.Event, bool) {
	if x, err := e.expand(id, r); err == nil {
		r = x
	}
	return Project(r)
}
