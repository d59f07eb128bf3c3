package conformance

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"
)

// Execute roles a Target may describe.
const (
	// RoleEcho is a fast, deterministic execution; it is required.
	RoleEcho = "echo"
	// RoleSleep runs longer than the deadline and cancel cases wait; it
	// completes through finish if nothing stops it. Its execute may run
	// until then or answer returned, the work going on in the
	// background; either way a cancel, or the deadline, must stop it.
	// With Runs, exec/at-most-once-running repeats it while it runs.
	RoleSleep = "sleep"
	// RoleWrite stores state in its binding; RoleRead's Check passes only
	// when it observes that state.
	RoleWrite = "write"
	RoleRead  = "read"
	// RoleUnsupported is a descriptor the provider does not support; when
	// absent the suite invents one.
	RoleUnsupported = "unsupported"
	// RoleAllocation's output identifies the binding's allocation (a
	// container id, a directory, a counter): equal outputs mean one
	// allocation. concurrency/shared-binding and lazy/first-use compare
	// the outputs of concurrent first calls with it.
	RoleAllocation = "allocation"
	// RoleStuck runs past the deadline the suite sends, or until it is
	// cancelled, and its cleanup then fails (a process that cannot be
	// killed, a file that cannot be removed); deadline/cleanup-evidence
	// checks the timeout keeps that evidence, and cancel/cleanup-evidence
	// (with the cancel capability) that the cancelled failure does.
	RoleStuck = "stuck"
	// RoleProgress answers its execute with an accepted or progress
	// receipt; exec/progress-receipt checks it is well formed and that the
	// Tool is not completed afterwards.
	RoleProgress = "progress"
)

// Optional capabilities. A case for a capability the Target does not
// declare is skipped; a declared capability must pass; Options.Expect turns
// an undeclared one into a failure.
const (
	CapCancel         = "cancel"           // cancel stops a running execute with "cancelled"
	CapLazyAllocation = "lazy-allocation"  // setup allocates nothing; concurrent first use shares one allocation
	CapTurnEndRelease = "turn-end-release" // setup registers on_turn_end and the method answers
	CapMethods        = "methods"          // call requests run declared methods
	CapReporter       = "reporter"         // the provider posts observations with the reporter grant
	CapRestart        = "restart"          // the provider survives a restart mid-binding honestly
)

// CapabilityNames lists every optional capability name.
func CapabilityNames() []string { return append([]string(nil), allCapabilities...) }

var allCapabilities = []string{CapCancel, CapLazyAllocation, CapTurnEndRelease, CapMethods, CapReporter, CapRestart}

// Duplicate setup handling a Target documents.
const (
	DuplicateFails    = "already_exists" // a second setup answers failure already_exists (the default)
	DuplicateAccepted = "accepted"       // a second setup of the same binding is accepted again
)

// Target is one provider under test.
type Target struct {
	// BaseURL is where {BaseURL}/v1/operations is served.
	BaseURL string
	// Token is the bearer token the provider requires.
	Token string
	// Client sends the commands; nil means a plain client that, as
	// Brain's, follows no redirect: a 3xx is the answer.
	Client *http.Client
	// CallbackHost is the host name or address at which the provider
	// reaches the machine the suite runs on. Empty, each case's fake
	// Brain listens on loopback and its callback and reporter grants name
	// 127.0.0.1, which only a provider on the same host (and in the same
	// network namespace) reaches. Set, it also listens on every interface,
	// on a port of its own, and its grants name http://CallbackHost:port:
	// for a provider in another container, a CI service or on another
	// machine. It is a host name or an IP address alone (an IPv6 one
	// bracketed or not); one with a scheme, a port or a path fails every
	// case, saying so.
	CallbackHost string
	// SetupConfiguration is sent with every setup; nil means {}.
	SetupConfiguration json.RawMessage
	// Executes describes the executions of each role (RoleEcho, ...).
	Executes map[string]Descriptor
	// Capabilities declares the optional capabilities.
	Capabilities Capabilities
	// DuplicateSetup is how a second setup of one binding is answered:
	// DuplicateFails (default) or DuplicateAccepted.
	DuplicateSetup string
}

// Descriptor is an execute request of one role.
type Descriptor struct {
	// Implementation is the opaque descriptor sent as implementation.
	Implementation json.RawMessage
	// Input is sent as input.
	Input json.RawMessage
	// Check judges the Tool's output (the value of an ok finish, else the
	// output of the result receipt); nil accepts any output.
	Check func(output json.RawMessage) error
	// Runs is how long the execution runs when nothing stops it (the
	// sleep role); the deadline case watches that long for a late
	// completion. Zero watches until the binding is torn down.
	Runs time.Duration
}

// Capabilities declares what a provider supports beyond the core.
type Capabilities struct {
	// Cancel: a cancel of a running execute makes it answer "cancelled".
	Cancel bool
	// LazyAllocation: setup allocates nothing and concurrent first
	// executes share one allocation.
	LazyAllocation bool
	// TurnEndRelease names the method setup registers with on_turn_end.
	TurnEndRelease string
	// Methods are the provider's call methods, each with a sample input
	// that must answer a result.
	Methods map[string]json.RawMessage
	// Reporter says how to make the provider post an observation.
	Reporter *ReporterTrigger
	// Restart restarts the provider at the same BaseURL, as a crash and
	// restart would; durable state survives as the provider defines.
	Restart func(t T)
}

// ReporterTrigger makes a provider post an observation with the binding's
// reporter grant: a call of method Call with Input after setup, or, when
// Call is empty, setup alone.
type ReporterTrigger struct {
	Call  string          `json:"call,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// declared reports whether the target declares capability name.
func (tg *Target) declared(name string) bool {
	c := tg.Capabilities
	switch name {
	case CapCancel:
		return c.Cancel
	case CapLazyAllocation:
		return c.LazyAllocation
	case CapTurnEndRelease:
		return c.TurnEndRelease != ""
	case CapMethods:
		return len(c.Methods) > 0
	case CapReporter:
		return c.Reporter != nil
	case CapRestart:
		return c.Restart != nil
	}
	return false
}

// Declared lists the capabilities tg declares.
func (tg Target) Declared() []string {
	var out []string
	for _, name := range allCapabilities {
		if tg.declared(name) {
			out = append(out, name)
		}
	}
	return out
}

// Options tune a run. The zero value (or nil) is a sensible default.
type Options struct {
	// Expect lists capabilities the target must declare.
	Expect []string
	// Serial runs the cases one at a time.
	Serial bool
	// Timeout bounds each case; default 60s.
	Timeout time.Duration
	// Deadline is the deadline_ms the deadline case sends; default 500ms.
	Deadline time.Duration
	// Grace is how late after a deadline or a cancel the answer may come;
	// default 5s.
	Grace time.Duration
	// MaxBodyBytes is the provider's body limit; default 16 MiB.
	MaxBodyBytes int64
	// Concurrency is how many executes the concurrency cases send at once;
	// default 4.
	Concurrency int
	// Run, when non-empty, runs only the cases it matches: case ids,
	// globs ("auth/*") or group prefixes ending in "/" ("transport/").
	Run []string
	// Skip leaves out the cases it matches, in the same forms as Run.
	Skip []string
	// OnStart and OnResult, when set, are told of each case as it starts
	// and as it ends (Check only; from the cases' goroutines, so
	// concurrently unless Serial).
	OnStart  func(id string)
	OnResult func(Result)
}

func (o *Options) normalized() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Timeout <= 0 {
		v.Timeout = 60 * time.Second
	}
	if v.Deadline <= 0 {
		v.Deadline = 500 * time.Millisecond
	}
	if v.Grace <= 0 {
		v.Grace = 5 * time.Second
	}
	if v.MaxBodyBytes <= 0 {
		v.MaxBodyBytes = 16 << 20
	}
	if v.Concurrency <= 0 {
		v.Concurrency = 4
	}
	return v
}

// ServeHandler serves h on a loopback test server closed when t ends and
// returns its URL. Closing waits for the requests h is still serving; when
// one has not returned a while after its client went away (a provider
// that ignores its request's context and never answers), the case fails
// saying so and the server is left behind, so that the run goes on.
func ServeHandler(t T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			srv.CloseClientConnections()
			srv.Close()
		}()
		wait := time.Duration(serveCloseWait.Load())
		if wait <= 0 {
			wait = defaultServeCloseWait
		}
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-closed:
		case <-timer.C:
			t.Errorf("a request to the provider never returned: its handler was still running %v after the case ended and its client had gone\n  rule: %s", wait, ruleReturns)
		}
	})
	return srv.URL
}

// defaultServeCloseWait is how long ServeHandler's cleanup waits for the
// handler's requests to end: longer than a provider takes to stop an
// operation whose client went away (envsdk.DefaultStopGrace).
const defaultServeCloseWait = 30 * time.Second

// serveCloseWait, when positive, replaces defaultServeCloseWait.
var serveCloseWait atomic.Int64
