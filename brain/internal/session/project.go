package session

import (
	"encoding/json"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// Project turns a journal record into its public event, or reports false
// for a private record. A transcript_delta that keeps fewer messages than
// were saved replaces a tail and is projected as transcript_replaced; pure
// appends and KV changes stay private. An extension event is projected to
// its own kind with its origin.
func Project(r journal.Record) (api.Event, bool) {
	ev := api.Event{Sequence: r.Sequence, RecordedAtMs: r.RecordedAtMs, EventType: r.Kind, Data: r.Data}
	switch r.Kind {
	case api.KindKVSet, api.KindKVDelete:
		return api.Event{}, false
	case api.KindTranscriptDelta:
		var d transcriptDelta
		if err := json.Unmarshal(r.Data, &d); err != nil || d.Keep >= d.Saved {
			return api.Event{}, false
		}
		ev.EventType = api.KindTranscriptReplaced
	case api.KindExtensionEvent:
		var x extensionEvent
		if err := json.Unmarshal(r.Data, &x); err != nil {
			return api.Event{}, false
		}
		ev.EventType, ev.Data = x.Kind, x.Payload
	}
	if len(r.Origin) > 0 {
		var o api.EventOrigin
		if err := json.Unmarshal(r.Origin, &o); err == nil {
			ev.Origin = &o
		}
	}
	if len(ev.Data) == 0 {
		ev.Data = json.RawMessage("{}")
	}
	if ev.EventType != "" && ev.EventType[0] == '_' {
		return api.Event{}, false
	}
	return ev, true
}
