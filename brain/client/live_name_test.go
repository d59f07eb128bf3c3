package client_test

import (
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestLiveFrameWithoutNameIsMalformed: with LiveFrames, a live frame is
// yielded with its name as the event type. One without a name is no frame
// of Brain's: it is not yielded as an event of no type, and the stream
// ends with ErrMalformedEvent without connecting again. Named live frames
// around it are yielded as they came.
func TestLiveFrameWithoutNameIsMalformed(t *testing.T) {
	first := "id: 1\nevent: session_creation_started\ndata: {\"sequence\":1,\"recorded_at_ms\":1700000000000,\"event_type\":\"session_creation_started\",\"data\":{}}\n\n"
	named := "event: " + api.LiveModelOutput + "\ndata: {\"model_call_sequence\":1,\"delta\":\"a\",\"index\":0}\n\n"
	nameless := "data: {\"model_call_sequence\":1,\"delta\":\"b\",\"index\":1}\n\n"
	got, streams, failed := followFrames(t, first+named+nameless+named, client.LiveFrames())
	if !errors.Is(failed, client.ErrMalformedEvent) {
		t.Fatalf("stream with a nameless live frame: error %v, want ErrMalformedEvent", failed)
	}
	if len(got) != 2 || got[0].Sequence != 1 || got[1].EventType != api.LiveModelOutput {
		t.Fatalf("stream with a nameless live frame yielded %+v, want event 1 and one named live frame", got)
	}
	if streams != 1 {
		t.Fatalf("stream with a nameless live frame connected %d times, want once", streams)
	}
	// Without LiveFrames, live frames are passed over, named or not.
	ended := "id: 2\nevent: session_ended\ndata: {\"sequence\":2,\"recorded_at_ms\":1700000000001,\"event_type\":\"session_ended\",\"data\":{}}\n\n"
	got, _, failed = followFrames(t, first+named+nameless+ended)
	if failed != nil || len(got) != 2 || got[1].EventType != api.KindSessionEnded {
		t.Fatalf("without LiveFrames: yielded %+v, error %v; want events 1 and 2 and no error", got, failed)
	}
}
