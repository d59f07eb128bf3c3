// Package agentloop is Brain's built-in default agentloop and the Go
// interface it is written against. The interface mirrors the agentloop
// service names of the callback API (model, dispatch, emit, telemetry,
// events, set_transcript, kv_read, kv_put, kv_delete, environments), so the
// same loop runs natively inside the engine or, built with GOOS=wasip1,
// as a guest module. The package depends on the standard library and the
// stdlib-only brain/api wire types.
package agentloop
