package envtest

import (
	"net/http"
	"time"
)

// FaultKind selects what an injected fault does.
type FaultKind int

// Fault kinds.
const (
	// LoseAck processes the call (its effect is committed and recorded),
	// then, after Delay when set, closes the connection without
	// answering.
	LoseAck FaultKind = iota + 1
	// ServerError answers Status (default 503) without processing.
	ServerError
	// SlowReply processes the call and waits Delay before answering (or
	// until the caller gives up).
	SlowReply
	// RevokedToken revokes the call's token before checking it, so the
	// call and every later one with that token answer 401.
	RevokedToken
)

// String names the fault kind in words.
func (k FaultKind) String() string {
	switch k {
	case LoseAck:
		return "lost acknowledgement"
	case ServerError:
		return "server error"
	case SlowReply:
		return "slow reply"
	case RevokedToken:
		return "revoked token"
	}
	return "fault"
}

// Fault is a fault injected into the calls of one method.
type Fault struct {
	Kind   FaultKind
	Status int           // ServerError: the status, default 503
	Delay  time.Duration // SlowReply: how long to wait; LoseAck: how long to hold the call before closing
	// Token limits the fault to calls with this token; "" matches all.
	Token string
	// Times is how many calls the fault affects; 0 means every one.
	Times int

	used int
}

// Inject adds a fault to the calls of method (use MethodReporter for
// reporter posts). Faults apply in the order injected; a fault whose Times
// are used up no longer applies.
func (b *Brain) Inject(method string, f Fault) {
	if f.Kind == ServerError && f.Status == 0 {
		f.Status = http.StatusServiceUnavailable
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults[method] = append(b.faults[method], &f)
}

// ClearFaults removes every injected fault.
func (b *Brain) ClearFaults() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = map[string][]*Fault{}
}

// takeFault returns a copy of the first applicable fault for the call and
// counts its use. It holds b.mu.
func (b *Brain) takeFaultLocked(method, token string) *Fault {
	for _, f := range b.faults[method] {
		if f.Token != "" && f.Token != token {
			continue
		}
		if f.Times > 0 && f.used >= f.Times {
			continue
		}
		f.used++
		c := *f
		return &c
	}
	return nil
}
