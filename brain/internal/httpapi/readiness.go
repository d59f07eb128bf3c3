package httpapi

import "sync"

// Reasons /health/ready answers 503, as its log says them.
const (
	notReadyWrites  = "durable writes are failing"
	notReadyStorage = "the storage backend is unavailable"
)

// readiness remembers what the last probe of /health/ready found, so that
// the log says each change once: a probe every few seconds while the
// database is down writes one line, not one a probe.
type readiness struct {
	mu  sync.Mutex
	why string // why the server is not ready; "" when it is
}

// observeReadiness records a probe's finding: why is "" when the server is ready,
// else the reason it is not, and err its cause. A change from ready to not
// ready (or to another reason) is logged at warn level with the reason and
// its cause, the return to ready at info level. The cause is the storage's
// own error, which names the database's host, user and name but not a
// password (the database URL is never quoted).
func (s *Server) observeReadiness(why string, err error) {
	s.ready.mu.Lock()
	was := s.ready.why
	s.ready.why = why
	s.ready.mu.Unlock()
	switch {
	case why == was:
	case why != "":
		s.log.Warn("not ready: "+why, "err", err)
	default:
		s.log.Info("ready again", "was", was)
	}
}
