package httpapi

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/brain-in-go/brain/brain/api"
)

// transcript answers the saved messages: all of them as a
// SessionTranscript, or, when the query names a part (from and limit, or
// tail), that part as a TranscriptPart, so that a reader of a long
// transcript need not receive all of it.
func (s *Server) transcript(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	part, err := transcriptPart(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	tr, err := s.opts.Engine.Transcript(r.Context(), id)
	if err != nil {
		WriteError(w, err)
		return
	}
	if !part.asked {
		WriteJSON(w, http.StatusOK, tr)
		return
	}
	WriteJSON(w, http.StatusOK, part.of(tr))
}

// partQuery is the part of a transcript a read asks for: limit messages
// from from, or the newest tail when fromEnd.
type partQuery struct {
	asked   bool
	fromEnd bool
	from    int
	limit   int
	tail    int
}

// transcriptPart reads the part the query asks for: from (a message's
// place, from 0) with limit (0..MaxTranscriptPart, MaxTranscriptPart
// when absent), or tail (0..MaxTranscriptPart), not both; neither asks
// for the whole transcript. A value that is not one such integer, or a
// query the server cannot read, is refused 400 rather than ignored.
func transcriptPart(r *http.Request) (partQuery, error) {
	if r.URL.RawQuery == "" {
		return partQuery{}, nil
	}
	q, err := query(r)
	if err != nil {
		return partQuery{}, err
	}
	p := partQuery{limit: api.MaxTranscriptPart}
	if q.Has("tail") {
		if q.Has("from") || q.Has("limit") {
			return partQuery{}, badRequest("tail cannot be given with from or limit")
		}
		if p.tail, err = partValue(q, "tail", api.MaxTranscriptPart); err != nil {
			return partQuery{}, err
		}
		p.asked, p.fromEnd = true, true
		return p, nil
	}
	if q.Has("from") {
		if p.from, err = partValue(q, "from", -1); err != nil {
			return partQuery{}, err
		}
		p.asked = true
	}
	if q.Has("limit") {
		if p.limit, err = partValue(q, "limit", api.MaxTranscriptPart); err != nil {
			return partQuery{}, err
		}
		p.asked = true
	}
	return p, nil
}

// partValue answers the query value name: one decimal integer from 0 to
// most (any that fits an int when most is negative), or the 400.
func partValue(q url.Values, name string, most int) (int, error) {
	vs := q[name]
	bound := "a non-negative integer"
	if most >= 0 {
		bound = "an integer from 0 to " + strconv.Itoa(most)
	}
	if len(vs) != 1 {
		return 0, badRequest(name + " must be given once, " + bound)
	}
	n, err := strconv.ParseUint(vs[0], 10, strconv.IntSize-1)
	if err != nil || (most >= 0 && n > uint64(most)) {
		return 0, badRequest(name + " must be " + bound)
	}
	return int(n), nil
}

// of answers the part of tr the query asks for.
func (p partQuery) of(tr api.SessionTranscript) api.TranscriptPart {
	total := len(tr.Messages)
	from, to := min(p.from, total), 0
	if p.fromEnd {
		from = total - min(p.tail, total)
		to = total
	} else {
		to = from + min(p.limit, total-from)
	}
	return api.TranscriptPart{Messages: tr.Messages[from:to:to], ThroughSequence: tr.ThroughSequence, Total: total, Offset: from}
}
