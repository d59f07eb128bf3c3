package api

import (
	"encoding/json"
	"testing"
)

func TestReservedNames(t *testing.T) {
	for _, k := range []string{"turn_ended", "_extension_event", "_anything", "model_call_limit", "conflict",
		"emit_limit", "reserved_name", "tool_call_failed", "environment_teardown_started", "transcript_replaced", "kv_set", "model_output", ""} {
		if !IsReserved(k) {
			t.Errorf("%q is not reserved", k)
		}
	}
	for _, k := range []string{"progress", "note", "my.event:v1"} {
		if IsReserved(k) {
			t.Errorf("%q is reserved", k)
		}
	}
}

func TestWireShapes(t *testing.T) {
	b, _ := json.Marshal(ToolResultBlock("call_1", json.RawMessage(`"x"`), false))
	if string(b) != `{"type":"tool_result","tool_use_id":"call_1","content":"x","is_error":false}` {
		t.Fatalf("tool_result = %s", b)
	}
	var req CreateSessionRequest
	if err := json.Unmarshal([]byte(`{"model":{"provider":"scripted","name":"m","api_key":"k"},"idle_ttl_ms":0}`), &req); err != nil {
		t.Fatal(err)
	}
	if req.Agentloop != nil || req.Tools != nil || req.IdleTTLMs == nil || *req.IdleTTLMs != 0 || req.Model.APIKey != "k" {
		t.Fatalf("req = %+v", req)
	}
	ev, _ := json.Marshal(Event{Sequence: 3, EventType: "progress", Data: json.RawMessage(`{}`), Origin: &EventOrigin{Kind: OriginTool, Sequence: 2}})
	if string(ev) != `{"sequence":3,"recorded_at_ms":0,"event_type":"progress","data":{},"origin":{"kind":"tool","sequence":2}}` {
		t.Fatalf("event = %s", ev)
	}
	e, _ := json.Marshal(&ApiError{Code: CodeConflict, Message: "busy", Details: AdmissionRejected})
	if string(e) != `{"code":"conflict","message":"busy","retryable":false,"details":{"admission":"rejected"}}` {
		t.Fatalf("error = %s", e)
	}
	if !DefaultRetryable(CodeOverloaded) || DefaultRetryable(CodeConflict) {
		t.Fatal("default retryable")
	}
}
