package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// reference is an in-memory environment/v1 provider written with envsdk:
// bindings hold a key/value store allocated lazily on first execute.
type reference struct {
	envsdk.Base

	// shared makes every binding use one store (a deliberately broken
	// variant).
	shared bool
	// perCaller makes every concurrent first caller allocate a store of
	// its own, the last one kept (a deliberately broken variant).
	perCaller bool
	// noEvidence drops the cleanup failure of the stuck descriptor, and
	// finishAfterProgress completes the progress descriptor's Tool after
	// answering progress (deliberately broken variants).
	noEvidence, finishAfterProgress bool
	// byName keys bindings by environment name alone, so that the bindings
	// of two sessions with one name share a store (a deliberately broken
	// variant).
	byName bool
	// inspectsAnyBinding makes the inspect method answer for a binding it
	// does not have (torn down, or never set up) as for one not yet
	// allocated (a deliberately broken variant).
	inspectsAnyBinding bool
	// sameReport makes the report method answer the same output every
	// time, so that only its observations tell one run from another.
	sameReport bool
	// allocations counts the stores allocated, naming each.
	allocations atomic.Int64

	mu       sync.Mutex
	bindings map[string]*binding
	common   envsdk.Lazy[*store]
}

type binding struct {
	store envsdk.Lazy[*store]
	racy  *store
}

type store struct {
	id   int64
	mu   sync.Mutex
	data map[string]json.RawMessage
}

func newReference() *reference { return &reference{bindings: map[string]*binding{}} }

type refConfig struct {
	Label string `json:"label,omitempty"`
}

func (p *reference) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	var cfg refConfig
	if err := c.DecodeConfiguration(&cfg); err != nil {
		return envsdk.SetupResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.bindings[p.key(c)]; ok {
		return envsdk.SetupResult{}, envsdk.Fail(envapi.CodeAlreadyExists, "binding "+p.key(c)+" is already set up")
	}
	p.bindings[p.key(c)] = &binding{}
	return envsdk.SetupResult{OnTurnEnd: "release"}, nil
}

// key is the key of c's binding.
func (p *reference) key(c *envsdk.Ctx) string {
	if p.byName {
		return c.Environment
	}
	return c.BindingKey()
}

func (p *reference) binding(c *envsdk.Ctx) (*binding, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.bindings[p.key(c)]
	if !ok {
		return nil, envsdk.Fail(envapi.CodeUnavailable, "binding "+p.key(c)+" is not set up here; its resource is not restored")
	}
	return b, nil
}

func (p *reference) store(c *envsdk.Ctx) (*store, error) {
	b, err := p.binding(c)
	if err != nil {
		return nil, err
	}
	lazy := &b.store
	if p.shared {
		lazy = &p.common
	}
	alloc := func(context.Context) (*store, error) {
		return &store{id: p.allocations.Add(1), data: map[string]json.RawMessage{}}, nil
	}
	if p.perCaller {
		return p.racyStore(c, b, alloc)
	}
	return lazy.Get(c.Context(), alloc)
}

// racyStore checks for a store, allocates outside the lock and keeps the
// last one: every concurrent first caller allocates.
func (p *reference) racyStore(c *envsdk.Ctx, b *binding, alloc func(context.Context) (*store, error)) (*store, error) {
	p.mu.Lock()
	s := b.racy
	p.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, _ = alloc(c.Context())
	time.Sleep(time.Second) // long enough for every concurrent first caller to get here

	p.mu.Lock()
	b.racy = s
	p.mu.Unlock()
	return s, nil
}

type descriptor struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

func (p *reference) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var d descriptor
	if err := json.Unmarshal(x.Implementation, &d); err != nil || d.Type != "reference" {
		return envapi.Receipt{}, envsdk.Failf(envapi.CodeUnsupported, "unsupported descriptor %s", x.Implementation)
	}
	if d.Name == "stuck" {
		// Work that outlives its deadline and whose cleanup then fails.
		if _, err := p.binding(c); err != nil {
			return envapi.Receipt{}, err
		}
		<-c.Context().Done()
		if p.noEvidence {
			return envapi.Receipt{}, c.Context().Err()
		}
		return envapi.Receipt{}, fmt.Errorf("cleanup of the stuck work failed: scratch directory %q is still in use", "/tmp/conformance-stuck")
	}
	s, err := p.store(c)
	if err != nil {
		return envapi.Receipt{}, err
	}
	switch d.Name {
	case "echo":
		if x.Invocation.Granted(envapi.MethodEmit) {
			if _, err := x.Invocation.Emit(c.Context(), "echo", x.Input); err != nil {
				return envapi.Receipt{}, fmt.Errorf("emit: %w", err)
			}
		}
		return envsdk.Output(map[string]json.RawMessage{"echo": x.Input})
	case "sleep":
		var in struct {
			Ms int64 `json:"ms"`
		}
		if err := json.Unmarshal(x.Input, &in); err != nil {
			return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, err.Error())
		}
		timer := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
			return envsdk.Output(map[string]int64{"slept": in.Ms})
		case <-c.Context().Done():
			return envapi.Receipt{}, c.Context().Err()
		}
	case "allocation":
		return envsdk.Output(map[string]int64{"allocation": s.id})
	case "progress":
		if p.finishAfterProgress {
			go func() {
				time.Sleep(100 * time.Millisecond)
				out := envapi.OK(json.RawMessage(`{"late":true}`))
				_, _ = x.Invocation.Finish(context.Background(), &out)
			}()
		}
		return envapi.Progress(json.RawMessage(`{"step":1}`)), nil
	case "write", "read":
		var in struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value,omitempty"`
		}
		if err := json.Unmarshal(x.Input, &in); err != nil || in.Key == "" {
			return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, "want {key, value?}")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if d.Name == "write" {
			s.data[in.Key] = in.Value
			return envsdk.Output(map[string]string{"written": in.Key})
		}
		v, ok := s.data[in.Key]
		return envsdk.Output(map[string]any{"found": ok, "value": v})
	}
	return envapi.Receipt{}, envsdk.Failf(envapi.CodeUnsupported, "unsupported descriptor name %q", d.Name)
}

func (p *reference) Teardown(c *envsdk.Ctx) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.bindings, p.key(c))
	return nil
}

func (p *reference) Methods() map[string]envsdk.Method {
	obj := json.RawMessage(`{"type":"object"}`)
	return map[string]envsdk.Method{
		"release": {Description: "turn-end release: keeps the store", InputSchema: obj, Run: func(c *envsdk.Ctx, _ json.RawMessage) (any, error) {
			if _, err := p.binding(c); err != nil {
				return nil, err
			}
			return map[string]bool{"released": true}, nil
		}},
		"inspect": {Description: "reports whether the store is allocated", InputSchema: obj, Run: func(c *envsdk.Ctx, _ json.RawMessage) (any, error) {
			b, err := p.binding(c)
			if err != nil && p.inspectsAnyBinding {
				return map[string]bool{"allocated": false}, nil
			}
			if err != nil {
				return nil, err
			}
			_, _, done := b.store.Peek()
			return map[string]bool{"allocated": done}, nil
		}},
		"report": {Description: "posts an availability observation", InputSchema: obj, Run: func(c *envsdk.Ctx, _ json.RawMessage) (any, error) {
			seq, err := c.Reporter().Result(c.Context(), envapi.Observation{Scope: envapi.ScopeEnvironment, Availability: envapi.Available, Message: "ready"}, nil)
			if err != nil {
				return nil, fmt.Errorf("report: %w", err)
			}
			if p.sameReport {
				return map[string]bool{"reported": true}, nil
			}
			return map[string]uint64{"sequence": seq}, nil
		}},
	}
}

// swappable serves whichever handler is current, so that a restart keeps
// the URL.
type swappable struct{ h atomic.Pointer[http.Handler] }

func (s *swappable) set(h http.Handler)                               { s.h.Store(&h) }
func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }

const refToken = "reference-token"

// expectJSON checks that output equals want as JSON.
func expectJSON(want string) func(json.RawMessage) error {
	return func(out json.RawMessage) error {
		var a, b any
		if err := json.Unmarshal(out, &a); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(want), &b); err != nil {
			return err
		}
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		if string(x) != string(y) {
			return fmt.Errorf("got %s, want %s", x, y)
		}
		return nil
	}
}

func impl(name string) json.RawMessage {
	return json.RawMessage(`{"type":"reference","name":"` + name + `"}`)
}

// sleepMs is how long the sleep descriptor runs when nothing stops it.
const sleepMs = 3000

// referenceTarget describes the reference provider served at url.
func referenceTarget(url string, restart func(t conformance.T)) conformance.Target {
	return conformance.Target{
		BaseURL:            url,
		Token:              refToken,
		SetupConfiguration: json.RawMessage(`{"label":"conformance"}`),
		Executes: map[string]conformance.Descriptor{
			conformance.RoleEcho:       {Implementation: impl("echo"), Input: json.RawMessage(`{"n":1}`), Check: expectJSON(`{"echo":{"n":1}}`)},
			conformance.RoleSleep:      {Implementation: impl("sleep"), Input: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, sleepMs)), Runs: sleepMs * time.Millisecond},
			conformance.RoleWrite:      {Implementation: impl("write"), Input: json.RawMessage(`{"key":"k","value":"v1"}`)},
			conformance.RoleRead:       {Implementation: impl("read"), Input: json.RawMessage(`{"key":"k"}`), Check: expectJSON(`{"found":true,"value":"v1"}`)},
			conformance.RoleAllocation: {Implementation: impl("allocation"), Input: json.RawMessage(`{}`)},
			conformance.RoleStuck:      {Implementation: impl("stuck"), Input: json.RawMessage(`{}`)},
			conformance.RoleProgress:   {Implementation: impl("progress"), Input: json.RawMessage(`{}`)},
		},
		Capabilities: conformance.Capabilities{
			Cancel:         true,
			LazyAllocation: true,
			TurnEndRelease: "release",
			Methods:        map[string]json.RawMessage{"inspect": json.RawMessage(`{}`)},
			Reporter:       &conformance.ReporterTrigger{Call: "report"},
			Restart:        restart,
		},
	}
}

// serveReference starts a provider built by newProvider, wrapped by wrap
// (nil: none), and describes it. Restart replaces the provider with a new
// instance at the same URL, losing its in-memory bindings.
func serveReference(t conformance.T, newProvider func() *reference, opts envsdk.Options, wrap func(http.Handler) http.Handler) conformance.Target {
	return serveProvider(t, func() envsdk.Provider { return newProvider() }, opts, wrap)
}

// serveProvider is serveReference for any provider described like the
// reference.
func serveProvider(t conformance.T, newProvider func() envsdk.Provider, opts envsdk.Options, wrap func(http.Handler) http.Handler) conformance.Target {
	if wrap == nil {
		wrap = func(h http.Handler) http.Handler { return h }
	}
	sw := &swappable{}
	start := func() { sw.set(wrap(envsdk.NewHandler(newProvider(), &opts))) }
	start()
	url := conformance.ServeHandler(t, sw)
	return referenceTarget(url, func(conformance.T) { start() })
}
