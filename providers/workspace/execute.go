package workspace

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Tool names of the implementation descriptor {"tool": NAME}.
const (
	ToolCommand = "command"
	ToolRead    = "read"
	ToolWrite   = "write"
	ToolList    = "list"
	ToolEdit    = "edit"
)

type descriptor struct {
	Tool string `json:"tool" validate:"required"`
}

// call is one execute as the tools see it.
type call struct {
	c   *envsdk.Ctx
	x   *envsdk.Execution
	b   *binding
	sp  *space
	cfg BindingConfig
}

// Execute runs one tool in the binding's workspace.
func (p *Provider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var d descriptor
	if err := envapi.Strict(x.Implementation, &d); err != nil {
		return envapi.Receipt{}, envsdk.Failf(envapi.CodeUnsupported, "unsupported implementation %.200s: want {\"tool\": NAME}", x.Implementation)
	}
	run, ok := tools[d.Tool]
	if !ok {
		return envapi.Receipt{}, envsdk.Failf(envapi.CodeUnsupported, "unsupported tool %q", d.Tool)
	}
	b, err := p.lookup(c.BindingKey())
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
	out, err := run(&call{c: c, x: x, b: b, sp: sp, cfg: cfg})
	if err != nil {
		return envapi.Receipt{}, err
	}
	return envsdk.Output(out)
}

var tools map[string]func(*call) (any, error)

func init() {
	tools = map[string]func(*call) (any, error){
		ToolCommand: runCommand,
		ToolRead:    runRead,
		ToolWrite:   runWrite,
		ToolList:    runList,
		ToolEdit:    runEdit,
	}
}

// decodeInput decodes an execute input strictly; errors are invalid_input
// naming the field.
func decodeInput(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := envapi.Strict(raw, v); err != nil {
		var fe *envapi.FieldError
		if errors.As(err, &fe) {
			field := "input"
			if fe.Field != "" {
				field += "." + fe.Field
			}
			return envsdk.Failf(envapi.CodeInvalidInput, "%s: %s", field, fe.Reason).WithDetails(map[string]string{"field": field})
		}
		return envsdk.Failf(envapi.CodeInvalidInput, "input: %v", err)
	}
	return nil
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
