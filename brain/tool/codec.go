package tool

import (
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/guestjson"
)

// The run path encodes and decodes its few small documents with the
// reflection-free codec of guestjson: a fresh instance per invocation
// would pay encoding/json's reflection and its cold type cache on every
// run.

// encodeOutcome encodes an optional outcome (null for nil) as
// json.Marshal does.
func encodeOutcome(o *api.Outcome) ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	e := guestjson.NewEncoder(64 + len(o.Value) + len(o.Content))
	e.Outcome(o)
	return e.B, e.Err
}

// encodeEmit encodes the input of the emit service.
func encodeEmit(eventType string, data []byte) ([]byte, error) {
	e := guestjson.NewEncoder(32 + len(eventType) + len(data))
	e.B = append(e.B, `{"event_type":`...)
	e.Str(eventType)
	e.B = append(e.B, `,"data":`...)
	if len(data) == 0 {
		e.B = append(e.B, "null"...)
	} else {
		e.Raw(data)
	}
	if e.Err != nil {
		return nil, fmt.Errorf("data: %w", e.Err)
	}
	return append(e.B, '}'), nil
}
