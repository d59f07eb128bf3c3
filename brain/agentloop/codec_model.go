package agentloop

import (
	"github.com/brain-in-go/brain/brain/api"
)

func (e *encoder) modelRequest(r *api.ModelRequest) {
	e.b = append(e.b, `{"messages":`...)
	e.messages(r.Messages)
	if r.System != nil {
		e.b = append(e.b, `,"system":`...)
		e.str(*r.System)
	}
	if len(r.Tools) > 0 {
		e.b = append(e.b, `,"tools":[`...)
		for i, t := range r.Tools {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, `{"name":`...)
			e.str(t.Name)
			e.b = append(e.b, `,"description":`...)
			e.str(t.Description)
			e.b = append(e.b, `,"input_schema":`...)
			e.raw(t.InputSchema)
			if len(t.OutputSchema) > 0 {
				e.b = append(e.b, `,"output_schema":`...)
				e.raw(t.OutputSchema)
			}
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
	}
	if len(r.ResponseFormat) > 0 {
		e.b = append(e.b, `,"response_format":`...)
		e.raw(r.ResponseFormat)
	}
	if r.MaxOutputTokens != nil {
		e.b = append(e.b, `,"max_output_tokens":`...)
		e.int(*r.MaxOutputTokens)
	}
	if len(r.Options) > 0 {
		e.b = append(e.b, `,"options":`...)
		e.raw(r.Options)
	}
	e.b = append(e.b, '}')
}

func (d *decoder) modelResult(r *api.ModelResult) {
	d.object(func(name string) {
		switch name {
		case "message":
			d.message(&r.Message)
		case "stop_reason":
			r.StopReason = api.StopReason(d.str())
		case "usage":
			u := &r.Usage
			d.object(func(name string) {
				switch name {
				case "input_tokens":
					u.InputTokens = d.intPtr()
				case "output_tokens":
					u.OutputTokens = d.intPtr()
				case "cache_creation_input_tokens":
					u.CacheCreationInputTokens = d.intPtr()
				case "cache_read_input_tokens":
					u.CacheReadInputTokens = d.intPtr()
				case "reasoning_tokens":
					u.ReasoningTokens = d.intPtr()
				case "total_input_tokens":
					u.TotalInputTokens = d.intPtr()
				case "provider_cost_usd":
					u.ProviderCostUSD = d.floatPtr()
				default:
					d.skip()
				}
			})
		default:
			d.skip()
		}
	})
}
