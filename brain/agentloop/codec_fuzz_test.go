package agentloop

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// checkHostAnswer decodes doc with dec and compares it with what
// encoding/json reads: the codec must never panic on any bytes, and an
// answer as the host writes it (json.Marshal of a value) must decode to
// exactly what encoding/json reads from it.
func checkHostAnswer[T any](t *testing.T, doc []byte, dec func(d *decoder, v *T)) {
	t.Helper()
	var any0 T
	_ = decodeWith(doc, func(d *decoder) { dec(d, &any0) })
	var v T
	if json.Unmarshal(doc, &v) != nil {
		return
	}
	host, err := json.Marshal(v)
	if err != nil {
		return
	}
	var want, got T
	if err := json.Unmarshal(host, &want); err != nil {
		t.Fatalf("encoding/json cannot read its own %s: %v", host, err)
	}
	if err := decodeWith(host, func(d *decoder) { dec(d, &got) }); err != nil {
		t.Fatalf("codec cannot read the host answer %s: %v", host, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("host answer %s:\n got %#v\nwant %#v", host, got, want)
	}
}

func FuzzHostAnswers(f *testing.F) {
	for _, s := range []string{
		`{"message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"c","name":"n","input":{"a":[1,"\u003c"]}}]},"stop_reason":"tool_use","usage":{"input_tokens":3,"provider_cost_usd":1e-7}}`,
		`[{"call_id":"a","sequence":3,"events":[{"sequence":4,"recorded_at_ms":1,"event_type":"tool_call_ended","data":{"outcome":{"status":"ok"}},"origin":{"kind":"tool","sequence":3,"environment":{"name":"e","sequence":2}}}],"finished":true}]`,
		`{"events":[{"sequence":1,"event_type":"x","data":{}}],"next_cursor":2}`,
		`{"code":"not_granted","message":"no","retryable":true,"details":{"a":[1]},"ref":2}`,
		`{"value":{"n":1}}`, `{}`, `null`, `42`,
		`{"input":{"message":"hi","media":[{"type":"image","url":"u"}]},"transcript":[],"kv":{"k":1},"tools":[{"name":"t","environments":["e"]}],"runtime":{"logical_time_ms":5,"deterministic_seed":"AAEC"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkHostAnswer(t, doc, func(d *decoder, v *api.ModelResult) { d.modelResult(v) })
		checkHostAnswer(t, doc, func(d *decoder, v *[]api.ToolReturn) { *v = d.toolReturns() })
		checkHostAnswer(t, doc, func(d *decoder, v *api.EventPage) { d.eventPage(v) })
		checkHostAnswer(t, doc, func(d *decoder, v *HostError) { d.hostError(v) })
		checkHostAnswer(t, doc, func(d *decoder, v *api.KVReadResult) { v.Value = d.kvReadResult() })
		checkHostAnswer(t, doc, func(d *decoder, v *api.TurnInput) { d.turnInput(v) })
		checkHostAnswer(t, doc, func(d *decoder, v *api.ToolCallEnded) { d.toolCallEnded(v) })
	})
}
