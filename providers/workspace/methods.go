package workspace

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

const (
	emptySchema = `{"type":"object","additionalProperties":false}`

	resetOutputSchema = `{"type":"object","additionalProperties":false,"required":["reset","previous_phase"],
"properties":{"reset":{"const":true},"previous_phase":{"enum":["new","ready","failed","lost"]}}}`

	releaseInputSchema = `{"type":"object","additionalProperties":false,"required":["sequence"],
"properties":{"sequence":{"type":"integer","minimum":1}}}`

	releaseOutputSchema = `{"type":"object","additionalProperties":false,"required":["released","policy"],
"properties":{"released":{"type":"boolean"},"policy":{"enum":["keep","wipe"]}}}`

	inspectOutputSchema = `{"type":"object","additionalProperties":false,"required":["allocated","phase","bytes","files"],
"properties":{"allocated":{"type":"boolean"},"phase":{"enum":["new","ready","failed","lost"]},
"label":{"type":"string"},"error":{"type":"string"},
"bytes":{"type":"integer","minimum":0},"files":{"type":"integer","minimum":0}}}`
)

// Methods declares reset, release and inspect.
func (p *Provider) Methods() map[string]envsdk.Method {
	return map[string]envsdk.Method{
		"reset": {
			Description:  "Drop the workspace, including a sticky allocation failure or loss; the next execute allocates an empty one; posts the diagnostic workspace.reset through the reporter. Fails with busy while executes run.",
			InputSchema:  json.RawMessage(emptySchema),
			OutputSchema: json.RawMessage(resetOutputSchema),
			Run:          p.method(p.reset),
		},
		"release": {
			Description:  "Turn-end hook: keeps or wipes the workspace per the operator's release policy; a wipe leaves a failed allocation or a loss for reset. Fails with busy while executes run.",
			InputSchema:  json.RawMessage(releaseInputSchema),
			OutputSchema: json.RawMessage(releaseOutputSchema),
			Run:          p.method(p.release),
		},
		"inspect": {
			Description:  "Report whether the workspace is allocated, its phase, its size in bytes and its number of entries.",
			InputSchema:  json.RawMessage(emptySchema),
			OutputSchema: json.RawMessage(inspectOutputSchema),
			Run:          p.method(p.inspect),
		},
	}
}

// method admits a call of run unless Close has begun; run's context ends
// with the call's and once Close begins.
func (p *Provider) method(run func(ctx context.Context, c *envsdk.Ctx, input json.RawMessage) (any, error)) func(*envsdk.Ctx, json.RawMessage) (any, error) {
	return func(c *envsdk.Ctx, input json.RawMessage) (any, error) {
		ctx, leave, err := p.enter(c)
		if err != nil {
			return nil, err
		}
		defer leave()
		return run(ctx, c, input)
	}
}

// ResetEvent is the diagnostic event type reset posts through the
// binding's reporter, with data {"previous_phase"}.
const ResetEvent = "workspace.reset"

func (p *Provider) reset(ctx context.Context, c *envsdk.Ctx, input json.RawMessage) (any, error) {
	b, err := p.lookup(c.BindingKey())
	if err != nil {
		return nil, err
	}
	if err := toolset.Decode(input, &struct{}{}); err != nil {
		return nil, err
	}
	prev, err := b.drop()
	if err != nil {
		return nil, err
	}
	if r := c.Reporter(); r != nil {
		// A diagnostic for the journal: it does not wake the Agentloop.
		if _, err := r.Event(ctx, ResetEvent, map[string]string{"previous_phase": prev}); err != nil {
			p.opts.Logger.Warn("report reset", "binding", b.key, "error", err)
		}
	}
	return map[string]any{"reset": true, "previous_phase": prev}, nil
}

func (p *Provider) release(_ context.Context, c *envsdk.Ctx, input json.RawMessage) (any, error) {
	var in struct {
		Sequence uint64 `json:"sequence" validate:"min=1"`
	}
	b, err := p.lookup(c.BindingKey())
	if err != nil {
		return nil, err
	}
	if err := toolset.Decode(input, &in); err != nil {
		return nil, err
	}
	if p.opts.Release == ReleaseKeep {
		b.mu.Lock()
		active, gone := b.active, b.gone
		b.mu.Unlock()
		if gone {
			return nil, tornDown(b.key)
		}
		if active > 0 {
			return nil, envsdk.Failf(envapi.CodeBusy, "%d executes are running", active)
		}
		return map[string]any{"released": false, "policy": ReleaseKeep}, nil
	}
	// A workspace lost since the last execute is recorded and reported as
	// lost, not wiped and replaced by an empty one.
	b.mu.Lock()
	active, phase, gone := b.active, b.rec.Phase, b.gone
	sp := &space{path: b.dirPath(), id: b.rec.identity(), dir: b.rec.Dir}
	b.mu.Unlock()
	if gone {
		return nil, tornDown(b.key)
	}
	if active > 0 {
		return nil, envsdk.Failf(envapi.CodeBusy, "%d executes are running", active)
	}
	if phase == phaseReady {
		if err := b.verify(c, sp); isTornDown(err) {
			return nil, err
		} else if err != nil && !b.dropped(sp) {
			// A loss, recorded and reported, stays for reset; a
			// directory a reset removed meanwhile is no loss.
			return map[string]any{"released": false, "policy": ReleaseWipe}, nil
		}
	}
	released, err := b.wipe()
	if err != nil {
		return nil, err
	}
	return map[string]any{"released": released, "policy": ReleaseWipe}, nil
}

// InspectOutput is the output of the method inspect.
type InspectOutput struct {
	Allocated bool   `json:"allocated"`
	Phase     string `json:"phase"`
	Label     string `json:"label,omitempty"`
	Error     string `json:"error,omitempty"`
	Bytes     int64  `json:"bytes"`
	Files     int    `json:"files"`
}

func (p *Provider) inspect(ctx context.Context, c *envsdk.Ctx, input json.RawMessage) (any, error) {
	b, err := p.lookup(c.BindingKey())
	if err != nil {
		return nil, err
	}
	if err := toolset.Decode(input, &struct{}{}); err != nil {
		return nil, err
	}
	for {
		out, current, err := b.inspect(ctx, c)
		if current {
			return out, err
		}
	}
}

// inspect reports the binding's workspace. The measure runs without the
// binding's lock; current is false when a teardown or reset dropped the
// workspace meanwhile, which makes the measure (perhaps of part of a
// workspace being removed, perhaps a failure) void. The measure stops
// once ctx ends (the call was given up, or Close began): cancelled, or
// unavailable while the provider stops.
func (b *binding) inspect(ctx context.Context, c *envsdk.Ctx) (out InspectOutput, current bool, err error) {
	b.mu.Lock()
	out = InspectOutput{Phase: b.rec.Phase, Label: b.cfg.Label, Error: b.rec.Error}
	sp := &space{path: b.dirPath(), id: b.rec.identity(), dir: b.rec.Dir}
	gone := b.gone
	b.mu.Unlock()
	if gone {
		return out, true, tornDown(b.key)
	}
	if out.Phase != phaseReady {
		return out, true, nil
	}
	if err := b.verify(c, sp); err != nil {
		if isTornDown(err) {
			return out, true, err
		}
		if b.dropped(sp) {
			// A reset or wipe removed the directory meanwhile: that is
			// no loss, and the binding is answered as it left it.
			return out, false, nil
		}
		out.Phase, out.Error = phaseLost, err.Error()
		return out, true, nil
	}
	u, err := measureWorkspace(ctx, sp.path)
	b.mu.Lock()
	gone, dropped := b.gone, b.rec.Dir != sp.dir
	b.mu.Unlock()
	switch {
	case gone:
		return out, true, tornDown(b.key)
	case dropped:
		return out, false, nil
	case err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), errStopping):
		return out, true, stoppingFailure()
	case err != nil && ctx.Err() != nil:
		return out, true, envsdk.Fail(envapi.CodeCancelled, "inspect was cancelled before the workspace was measured")
	case err != nil:
		return out, true, fsError(".", err)
	}
	out.Allocated, out.Bytes, out.Files = true, u.Bytes, u.Files
	return out, true, nil
}

// dropped reports whether the workspace sp is no longer the binding's
// current one: a reset or wipe replaced it since it was read.
func (b *binding) dropped(sp *space) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rec.Dir != sp.dir
}
