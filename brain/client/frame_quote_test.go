package client_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/client"
)

// TestMalformedFrameErrorIsBounded: a followed stream's frame whose id or
// name is not Brain's (a line of the stream may be 80 MiB long) ends the
// stream with ErrMalformedEvent, and the error that the caller prints or
// logs quotes only the start of that id or name, not the whole line.
func TestMalformedFrameErrorIsBounded(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	event := func(seq string) string {
		return `{"sequence":` + seq + `,"recorded_at_ms":1700000000001,"event_type":"turn_started","data":{}}`
	}
	for name, frame := range map[string]string{
		"long id":              "id: " + long + "\nevent: turn_started\ndata: " + event("2") + "\n\n",
		"long id, undecodable": "id: " + long + "\nevent: turn_started\ndata: {\"sequence\":\"two\"}\n\n",
		"long id, no sequence": "id: " + long + "\nevent: turn_started\ndata: {\"event_type\":\"turn_started\"}\n\n",
		"long name":            "id: 2\nevent: " + long + "\ndata: " + event("2") + "\n\n",
		"long live frame name": "event: " + long + "\ndata: not json\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, _, failed := followFrames(t, "id: 1\nevent: session_creation_started\ndata: {\"sequence\":1,\"recorded_at_ms\":1700000000000,\"event_type\":\"session_creation_started\",\"data\":{}}\n\n"+frame, client.LiveFrames())
			if !errors.Is(failed, client.ErrMalformedEvent) {
				t.Fatalf("error %.300v, want ErrMalformedEvent", failed)
			}
			if n := len(failed.Error()); n > 2048 {
				t.Fatalf("the error is %d bytes long: %.300s...", n, failed.Error())
			}
		})
	}
}
