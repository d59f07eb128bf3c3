// Package hosts runs host environments: tools served by a caller's own
// process over a connection it opens to Brain.
//
// A host registers (Registry.Register) and receives an id host_… and a
// bearer token that is valid only on its own /v1/hosts/{host_id}/...
// routes. It opens one commands stream (Registry.Connect); a newer
// connection displaces the older one. A session declares an environment
// {"name": …, "driver": "host", "host_id": …}; Route sends that
// environment's operations here and every other one to the next
// session.Environments.
//
// A tool call on a host environment is committed (tool_call_started) by
// the session engine before Execute writes its HostCommand
// (operation invoke_tool, absolute deadline_at_ms) to the connection open
// at that moment. Commands are written once and never queued for a host
// that is not connected: without a connection the tool ends at once with
// the error code host_not_connected. The host reports through Update
// (result, returned, finish), Emit, Model and Call, which reach the tool
// call's session services with the same meaning as the HTTP callback
// methods. An update, an event or a service call of a method that
// records (emit, result, returned, finish, set_transcript, kv_put,
// kv_delete) may carry an idempotency key (UpdateKeyed, EmitKeyed,
// ServiceCallKeyed; a key with any other method is ErrKeyNotTaken): the
// same request of the same call sent again under it is answered with the
// first's sequence without being applied again, also after the call
// closed, while the host keeps the answer (its latest
// 2×Config.MaxCommands, in memory); another request under the key is
// ErrKeyConflict. A refused request keeps no answer. A call whose finish
// the session could not record (answered storage unavailable) stays
// reachable by its host while the session keeps its invocation token
// live, so that the finish sent again is answered as the session answers
// it (unavailable, then a conflict), not as a call the host never had.
//
// A command is handed to the connection's transport directly
// (Conn.Frames), never left in a queue: it counts as sent once the
// transport took it, and the transport reports how its write ended
// (Frame.Wrote); a failed write ends the connection. One the connection
// ended (or the call stopped) before the transport took it was not sent,
// and its call fails host_not_connected. When the connection that carried
// a command ends while the call is open (also when the command's own
// write failed), the call's outcome is unknown; it is never resent.
// Cancelling a call writes a cancel_tool command to the same connection;
// the cancel operation is answered accepted once the transport wrote it,
// unknown when the transport took it but its write failed or was not
// confirmed before the connection or the operation's delivery ended (the
// host may or may not have read it), and failure host_not_connected when
// the connection ended, or the operation's delivery did, before the
// transport took it (the cancel was not sent). A connection is kept from
// a suspend while a cancel it owes is being written; a call the session
// let go without cancelling it (its deadline passed, its lease was lost, a
// commit failed) is owed none.
//
// # Registrations on disk
//
// Registrations survive a restart in the data directory's resident-hosts/
// directory, one file per host named <host_id>.json, written atomically:
//
//	{"host_id":"host_…","token_sha256":"<hex SHA-256 of the token>","registered_at_ms":N}
//
// Only the token's digest is stored. A file that does not decode, that is
// larger than a registration can be (4 KiB) or that is not a regular file
// (a named pipe is not waited for) is skipped (and logged), unread, and
// never stops the server. A host that stays
// without a commands connection for Config.Unconnected after it
// registered, after the server started or after its last connection ended
// is forgotten and its file removed, whether or not a request names it
// (the registry looks every quarter of that window, and when it closes),
// so a restart does not bring it back. Commands are never stored: after a
// restart the engine records calls that were outstanding as ambiguous and
// a reconnecting host receives nothing of them.
package hosts
