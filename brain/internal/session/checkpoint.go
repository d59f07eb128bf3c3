package session

import "encoding/json"

// encode answers the JSON of the projection, byte for byte what
// json.Marshal answers for it, as the checkpoint stores it. A checkpoint
// is written again and again as the session grows, and its transcript is
// most of it: the messages encoded for the previous checkpoint are kept
// (st.enc) and copied, so that only the messages since are encoded. A
// rewrite of the transcript (a delta keeping fewer messages than were
// encoded) drops them (see forget).
func (st *state) encode() ([]byte, error) {
	head, err := json.Marshal(&st.stateHead)
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(&st.stateTail)
	if err != nil {
		return nil, err
	}
	if err := st.encodeMessages(); err != nil {
		return nil, err
	}
	// head is {...} and tail is {...}, neither empty: their fields are
	// joined around the transcript's.
	out := make([]byte, 0, len(head)+len(`,"transcript":[]`)+len(st.enc)+len(tail))
	out = append(out, head[:len(head)-1]...)
	out = append(out, `,"transcript":`...)
	if st.Transcript == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, '[')
		out = append(out, st.enc...)
		out = append(out, ']')
	}
	out = append(out, ',')
	return append(out, tail[1:]...), nil
}

// encodeMessages extends st.enc with the messages of the transcript it
// does not hold yet.
func (st *state) encodeMessages() error {
	if st.encMsgs > len(st.Transcript) {
		st.forget(0)
	}
	for i := st.encMsgs; i < len(st.Transcript); i++ {
		b, err := json.Marshal(&st.Transcript[i])
		if err != nil {
			return err
		}
		if i > 0 {
			st.enc = append(st.enc, ',')
		}
		st.enc = append(st.enc, b...)
		st.encMsgs = i + 1
	}
	return nil
}

// forget drops the kept encoding when a transcript delta replaced
// messages it holds (those from keep on); the next checkpoint encodes the
// whole transcript again. Rewrites are rare: a compaction, a
// set_transcript that changes earlier messages.
func (st *state) forget(keep int) {
	if keep < st.encMsgs {
		st.enc, st.encMsgs = nil, 0
	}
}
