package envtest

// reservedNames are the event types Brain keeps for itself besides the
// private names (a leading underscore): its journal record kinds, the
// records of every effect, its live frames, and its API error and failure
// codes. An extension may not emit them; Brain answers 422 reserved_name.
// envsdk may not import Brain's packages, so the list is a copy; the test
// TestEnvtestAnswersEmitsAsBrain of brain/e2e holds it to Brain's.
var reservedNames = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{
		"activation_ended", "activation_failed", "activation_started", "agentloop_failed", "ambiguous",
		"cancelled", "conflict", "decision_limit", "emit_limit", "environment_call_ended",
		"environment_call_failed", "environment_call_started", "environment_closed",
		"environment_detach_ended", "environment_detach_failed", "environment_detach_started",
		"environment_error", "environment_incarnation_stale", "environment_not_ready",
		"environment_preparation_failed", "environment_setup_ended", "environment_setup_failed",
		"environment_setup_started", "environment_teardown_ended", "environment_teardown_failed",
		"environment_teardown_started", "environment_unreachable", "executor_failed", "internal",
		"interrupted", "invalid_request", "invalid_transcript", "kv_delete", "kv_set",
		"model_call_ended", "model_call_failed", "model_call_limit", "model_call_started",
		"model_output", "model_output_incomplete", "model_output_invalid", "model_provider_failed",
		"model_request", "model_usage", "not_found", "not_granted", "output_emitted", "overloaded",
		"reserved_name", "session_creation_ended", "session_creation_failed",
		"session_creation_started", "session_end_failed", "session_end_started", "session_ended",
		"session_resumed", "session_suspended", "timeout", "tool_call_ended", "tool_call_failed",
		"tool_call_returned", "tool_call_started", "tool_cancel_ended", "tool_cancel_failed",
		"tool_cancel_started", "tool_error", "tool_result_emitted", "transcript_delta",
		"transcript_replaced", "turn_ended", "turn_failed", "turn_started", "unauthorized", "unknown",
	} {
		m[k] = true
	}
	return m
}()

// reserved reports whether an extension may not emit eventType.
func reserved(eventType string) bool {
	return eventType == "" || eventType[0] == '_' || reservedNames[eventType]
}
