package hosts

// A call whose finish the session could not record (the journal failed)
// is closed at once, yet its host, answered 503, may well send the finish
// again. The session keeps such a call's invocation token live, and
// answers every later call of it storage unavailable while the call's
// close cannot be written, then a conflict saying what became of the call
// (see session.Engine.Execution). Its command is kept here for that as
// long as the token is live, so that a host's finish sent again reaches
// that answer rather than "no open tool call".

// keepUnrecordedLocked keeps command c of call k, whose execution just
// closed, when the call's invocation token is still live (its finish
// could not be recorded). Commands whose token was revoked meanwhile
// (the session was deleted, or later such calls pushed the call out) are
// forgotten on the way, so that the map holds no more than the session
// engine answers for.
func (h *host) keepUnrecordedLocked(k key, c *command) {
	for old, kept := range h.unrecorded {
		if revoked(kept.grant) {
			delete(h.unrecorded, old)
		}
	}
	if revoked(c.grant) {
		return
	}
	if h.unrecorded == nil {
		h.unrecorded = map[key]*command{}
	}
	h.unrecorded[k] = c
}

// unrecordedLocked answers the kept command of call k while its token is
// live.
func (h *host) unrecordedLocked(k key) (*command, bool) {
	c, ok := h.unrecorded[k]
	if !ok {
		return nil, false
	}
	if revoked(c.grant) {
		delete(h.unrecorded, k)
		return nil, false
	}
	return c, true
}

// revoked reports whether a call's invocation token was revoked; a call
// without one has none to keep live.
func revoked(grant <-chan struct{}) bool {
	if grant == nil {
		return true
	}
	select {
	case <-grant:
		return true
	default:
		return false
	}
}
