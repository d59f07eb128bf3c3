package agentloop

import (
	"github.com/brain-in-go/brain/brain/api"
)

func (e *encoder) invocations(calls []api.ToolInvocation) {
	if calls == nil {
		e.B = append(e.B, "null"...)
		return
	}
	e.B = append(e.B, '[')
	for i, c := range calls {
		if i > 0 {
			e.B = append(e.B, ',')
		}
		e.B = append(e.B, `{"call_id":`...)
		e.Str(c.CallID)
		e.B = append(e.B, `,"name":`...)
		e.Str(c.Name)
		e.B = append(e.B, `,"environment":`...)
		e.Str(c.Environment)
		if c.EnvironmentSequence != 0 {
			e.B = append(e.B, `,"environment_sequence":`...)
			e.Uint(c.EnvironmentSequence)
		}
		e.B = append(e.B, `,"input":`...)
		e.Raw(c.Input)
		e.B = append(e.B, '}')
	}
	e.B = append(e.B, ']')
}

func (d *decoder) toolReturns() []api.ToolReturn {
	var out []api.ToolReturn
	if d.Array(func() {
		var r api.ToolReturn
		d.Object(func(name string) {
			switch name {
			case "call_id":
				r.CallID = d.Str()
			case "sequence":
				r.Sequence = d.Uint()
			case "events":
				r.Events = d.events()
			case "finished":
				r.Finished = d.Bool()
			default:
				d.Skip()
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
	d.Object(func(name string) {
		switch name {
		case "sequence":
			t.Sequence = d.Uint()
		case "is_error":
			t.IsError = d.Bool()
		case "outcome":
			d.Outcome(&t.Outcome)
		case "failure":
			if d.Null() {
				t.Failure = nil
				return
			}
			if t.Failure == nil {
				t.Failure = &api.Failure{}
			}
			d.failure(t.Failure)
		default:
			d.Skip()
		}
	})
}

// phaseOutcome reads the payload of tool_call_returned (its outcome) or
// of tool_result_emitted (its result) and answers that outcome, nil when
// there is none.
func (d *decoder) phaseOutcome() *api.Outcome {
	var o *api.Outcome
	d.Object(func(name string) {
		switch name {
		case "outcome", "result":
			if d.Null() {
				o = nil
				return
			}
			o = &api.Outcome{}
			d.Outcome(o)
		default:
			d.Skip()
		}
	})
	return o
}

// failure reads a Failure object into f.
func (d *decoder) failure(f *api.Failure) {
	d.Object(func(name string) {
		switch name {
		case "code":
			f.Code = d.Str()
		case "message":
			f.Message = d.Str()
		case "retryable":
			f.Retryable = d.Bool()
		case "ambiguous":
			f.Ambiguous = d.Bool()
		case "sequence":
			f.Sequence = d.Uint()
		case "details":
			f.Details = d.Raw()
		default:
			d.Skip()
		}
	})
}
