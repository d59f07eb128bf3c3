package agentloop

import (
	"github.com/brain-in-go/brain/brain/api"
)

func (e *encoder) invocations(calls []api.ToolInvocation) {
	if calls == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i, c := range calls {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, `{"call_id":`...)
		e.str(c.CallID)
		e.b = append(e.b, `,"name":`...)
		e.str(c.Name)
		e.b = append(e.b, `,"environment":`...)
		e.str(c.Environment)
		if c.EnvironmentSequence != 0 {
			e.b = append(e.b, `,"environment_sequence":`...)
			e.uint(c.EnvironmentSequence)
		}
		e.b = append(e.b, `,"input":`...)
		e.raw(c.Input)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ']')
}

func (d *decoder) toolReturns() []api.ToolReturn {
	var out []api.ToolReturn
	if d.array(func() {
		var r api.ToolReturn
		d.object(func(name string) {
			switch name {
			case "call_id":
				r.CallID = d.str()
			case "sequence":
				r.Sequence = d.uint()
			case "events":
				r.Events = d.events()
			case "finished":
				r.Finished = d.bool()
			default:
				d.skip()
			}
		})
		out = append(out, r)
	}) && out == nil {
		out = []api.ToolReturn{}
	}
	return out
}

// toolCallEnded reads the payload of tool_call_ended.
func (d *decoder) toolCallEnded(t *api.ToolCallEnded) {
	d.object(func(name string) {
		switch name {
		case "sequence":
			t.Sequence = d.uint()
		case "is_error":
			t.IsError = d.bool()
		case "outcome":
			o := &t.Outcome
			d.object(func(name string) {
				switch name {
				case "status":
					o.Status = d.str()
				case "value":
					o.Value = d.raw()
				case "message":
					o.Message = d.str()
				case "content":
					o.Content = d.raw()
				case "error":
					if d.null() {
						o.Error = nil
						return
					}
					if o.Error == nil {
						o.Error = &api.OutcomeError{}
					}
					oe := o.Error
					d.object(func(name string) {
						switch name {
						case "code":
							oe.Code = d.str()
						case "message":
							oe.Message = d.str()
						case "retryable":
							oe.Retryable = d.bool()
						case "details":
							oe.Details = d.raw()
						default:
							d.skip()
						}
					})
				default:
					d.skip()
				}
			})
		default:
			d.skip()
		}
	})
}

// outcome encodes a tool outcome envelope.
func (e *encoder) outcome(o *api.Outcome) {
	e.b = append(e.b, `{"status":`...)
	e.str(o.Status)
	if len(o.Value) > 0 {
		e.b = append(e.b, `,"value":`...)
		e.raw(o.Value)
	}
	if oe := o.Error; oe != nil {
		e.b = append(e.b, `,"error":{"code":`...)
		e.str(oe.Code)
		e.b = append(e.b, `,"message":`...)
		e.str(oe.Message)
		e.b = append(e.b, `,"retryable":`...)
		e.bool(oe.Retryable)
		if len(oe.Details) > 0 {
			e.b = append(e.b, `,"details":`...)
			e.raw(oe.Details)
		}
		e.b = append(e.b, '}')
	}
	if o.Message != "" {
		e.b = append(e.b, `,"message":`...)
		e.str(o.Message)
	}
	if len(o.Content) > 0 {
		e.b = append(e.b, `,"content":`...)
		e.raw(o.Content)
	}
	e.b = append(e.b, '}')
}
