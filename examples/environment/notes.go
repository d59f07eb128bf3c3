package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// ChangedEvent is the diagnostic the environment posts through the
// binding's reporter after every put: {"key", "revision"}.
const ChangedEvent = "notes.changed"

// notes is an environment/v1 provider: every binding (session,
// environment) owns a small key-value notebook, allocated lazily on its
// first execute and dropped at teardown. State lives in memory only.
type notes struct {
	envsdk.Base
	log *slog.Logger

	mu       sync.Mutex
	bindings map[string]*binding
}

type binding struct {
	label string
	book  envsdk.Lazy[*notebook]
}

type notebook struct {
	mu       sync.Mutex
	revision int64
	entries  map[string]string
}

func newNotes(log *slog.Logger) *notes {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &notes{log: log, bindings: map[string]*binding{}}
}

// config is a binding's configuration. Driver is the route name Brain
// uses to reach this provider ({"driver":"notes"}); Brain passes it along.
type config struct {
	Driver string `json:"driver,omitempty"`
	Label  string `json:"label,omitempty" validate:"max=64"`
}

// Setup records the binding; nothing is allocated yet.
func (p *notes) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	var cfg config
	if err := c.DecodeConfiguration(&cfg); err != nil {
		return envsdk.SetupResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.bindings[c.BindingKey()]; ok {
		return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeAlreadyExists, "binding %s is already set up", c.BindingKey())
	}
	p.bindings[c.BindingKey()] = &binding{label: cfg.Label}
	return envsdk.SetupResult{}, nil
}

// Teardown drops the binding's notebook.
func (p *notes) Teardown(c *envsdk.Ctx) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.bindings, c.BindingKey())
	return nil
}

func (p *notes) binding(c *envsdk.Ctx) (*binding, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.bindings[c.BindingKey()]
	if !ok {
		return nil, envsdk.Failf(envapi.CodeUnavailable, "binding %s is not set up here (notes live in memory and do not survive a restart)", c.BindingKey())
	}
	return b, nil
}

func (p *notes) notebook(c *envsdk.Ctx) (*notebook, error) {
	b, err := p.binding(c)
	if err != nil {
		return nil, err
	}
	return b.book.Get(c.Context(), func(context.Context) (*notebook, error) {
		return &notebook{entries: map[string]string{}}, nil
	})
}

// Tool inputs and outputs.
type (
	putInput struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	keyInput struct {
		Key string `json:"key"`
	}
	waitInput struct {
		Ms int64 `json:"ms"`
	}
)

// Execute runs the tool its implementation names: {"tool": "put" | "get" |
// "list" | "wait"}.
func (p *notes) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var impl struct {
		Tool string `json:"tool"`
	}
	if err := json.Unmarshal(x.Implementation, &impl); err != nil {
		return envapi.Receipt{}, envsdk.Failf(envapi.CodeUnsupported, "implementation %s: want {\"tool\": NAME}", x.Implementation)
	}
	switch impl.Tool {
	case "put", "get", "list", "wait":
	default:
		return envapi.Receipt{}, envsdk.Failf(envapi.CodeUnsupported, "no tool %q (put, get, list, wait)", impl.Tool)
	}
	book, err := p.notebook(c)
	if err != nil {
		return envapi.Receipt{}, err
	}
	switch impl.Tool {
	case "put":
		var in putInput
		if err := decode(x.Input, &in); err != nil {
			return envapi.Receipt{}, err
		}
		book.mu.Lock()
		book.revision++
		rev := book.revision
		book.entries[in.Key] = in.Value
		book.mu.Unlock()
		p.report(c, map[string]any{"key": in.Key, "revision": rev})
		return envsdk.Output(map[string]any{"key": in.Key, "revision": rev})
	case "get":
		var in keyInput
		if err := decode(x.Input, &in); err != nil {
			return envapi.Receipt{}, err
		}
		book.mu.Lock()
		v, ok := book.entries[in.Key]
		book.mu.Unlock()
		out := map[string]any{"key": in.Key, "found": ok}
		if ok {
			out["value"] = v
		}
		return envsdk.Output(out)
	case "list":
		if err := decode(x.Input, &struct{}{}); err != nil {
			return envapi.Receipt{}, err
		}
		book.mu.Lock()
		keys := make([]string, 0, len(book.entries))
		for k := range book.entries {
			keys = append(keys, k)
		}
		book.mu.Unlock()
		sort.Strings(keys)
		return envsdk.Output(map[string]any{"keys": keys})
	default: // wait
		var in waitInput
		if err := decode(x.Input, &in); err != nil {
			return envapi.Receipt{}, err
		}
		t := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return envsdk.Output(map[string]int64{"waited_ms": in.Ms})
		case <-c.Context().Done():
			// The handler answers timeout or cancelled from the cause.
			return envapi.Receipt{}, context.Cause(c.Context())
		}
	}
}

// report posts the change diagnostic; it is best effort and never fails
// the put.
func (p *notes) report(c *envsdk.Ctx, data any) {
	r := c.Reporter()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context()), 5*time.Second)
	defer cancel()
	if _, err := r.Event(ctx, ChangedEvent, data); err != nil {
		p.log.Warn("report change", "binding", c.BindingKey(), "err", err)
	}
}

// Methods are the calls Brain (or an extension with a grant) may make on a
// binding outside tool executions.
func (p *notes) Methods() map[string]envsdk.Method {
	obj := json.RawMessage(`{"type":"object","additionalProperties":false}`)
	return map[string]envsdk.Method{
		"stats": {
			Description:  "Report the label, whether the notebook is allocated and how many notes it holds.",
			InputSchema:  obj,
			OutputSchema: json.RawMessage(`{"type":"object","required":["allocated","notes"],"properties":{"label":{"type":"string"},"allocated":{"type":"boolean"},"notes":{"type":"integer"}}}`),
			Run: func(c *envsdk.Ctx, input json.RawMessage) (any, error) {
				if err := decode(input, &struct{}{}); err != nil {
					return nil, err
				}
				b, err := p.binding(c)
				if err != nil {
					return nil, err
				}
				out := map[string]any{"label": b.label, "allocated": false, "notes": 0}
				if book, err, done := b.book.Peek(); done && err == nil {
					book.mu.Lock()
					out["allocated"], out["notes"] = true, len(book.entries)
					book.mu.Unlock()
				}
				return out, nil
			},
		},
		"report": {
			Description: "Post the binding's availability as an actionable observation through its reporter.",
			InputSchema: obj,
			Run: func(c *envsdk.Ctx, input json.RawMessage) (any, error) {
				if _, err := p.binding(c); err != nil {
					return nil, err
				}
				r := c.Reporter()
				if r == nil {
					return nil, envsdk.Fail(envapi.CodeUnsupported, "this operation carried no reporter grant")
				}
				seq, err := r.Result(c.Context(), envapi.Observation{Scope: envapi.ScopeEnvironment, Availability: envapi.Available, Message: "notes ready"}, nil)
				if err != nil {
					return nil, fmt.Errorf("report: %w", err)
				}
				return map[string]uint64{"sequence": seq}, nil
			},
		},
	}
}

// decode reads a tool input strictly and checks its bounds.
func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return envsdk.Failf(envapi.CodeInvalidInput, "input: %v", err)
	}
	if err := validate(v); err != nil {
		return envsdk.Failf(envapi.CodeInvalidInput, "input: %v", err)
	}
	return nil
}

// validate checks the bounds of the tool inputs.
func validate(v any) error {
	switch in := v.(type) {
	case *putInput:
		if in.Key == "" || len(in.Key) > 256 {
			return errors.New("key: 1..256 bytes")
		}
		if len(in.Value) > 65536 {
			return errors.New("value: at most 65536 bytes")
		}
	case *keyInput:
		if in.Key == "" || len(in.Key) > 256 {
			return errors.New("key: 1..256 bytes")
		}
	case *waitInput:
		if in.Ms < 0 || in.Ms > 600000 {
			return errors.New("ms: 0..600000")
		}
	}
	return nil
}
