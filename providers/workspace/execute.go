package workspace

import (
	"context"
	"fmt"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// call is one execute as the tools see it.
type call struct {
	c *envsdk.Ctx
	// ctx ends with the operation's context and once Close begins.
	ctx context.Context
	x   *envsdk.Execution
	b   *binding
	sp  *space
	cfg BindingConfig
}

// Execute runs one tool of the standard tool set (package toolset) in the
// binding's workspace.
func (p *Provider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	ctx, leave, err := p.enter(c)
	if err != nil {
		return envapi.Receipt{}, err
	}
	defer leave()
	// The binding first: on one not set up every execute is unavailable.
	b, err := p.lookup(c.BindingKey())
	if err != nil {
		return envapi.Receipt{}, err
	}
	run, err := toolset.Select(x.Implementation, tools)
	if err != nil {
		return envapi.Receipt{}, err
	}
	if err := b.begin(); err != nil {
		return envapi.Receipt{}, err
	}
	defer b.end()
	sp, err := b.workspace(c)
	if err != nil {
		return envapi.Receipt{}, err
	}
	b.mu.Lock()
	cfg := b.cfg
	b.mu.Unlock()
	out, err := run(&call{c: c, ctx: ctx, x: x, b: b, sp: sp, cfg: cfg})
	if err != nil {
		return envapi.Receipt{}, err
	}
	return envsdk.Output(out)
}

var tools map[string]func(*call) (any, error)

func init() {
	tools = map[string]func(*call) (any, error){
		toolset.ToolCommand: runCommand,
		toolset.ToolRead:    runRead,
		toolset.ToolWrite:   runWrite,
		toolset.ToolList:    runList,
		toolset.ToolEdit:    runEdit,
	}
}

// outputLimit is the binding's cap on a stream or a read.
func (k *call) outputLimit() int {
	if k.cfg.OutputLimit > 0 && k.cfg.OutputLimit < k.b.p.opts.OutputLimit {
		return k.cfg.OutputLimit
	}
	return k.b.p.opts.OutputLimit
}

func invalidInput(format string, args ...any) *envsdk.Error {
	return envsdk.Fail(envapi.CodeInvalidInput, fmt.Sprintf(format, args...))
}
