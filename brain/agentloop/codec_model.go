package agentloop

import (
	"github.com/brain-in-go/brain/brain/api"
)

func (e *encoder) modelRequest(r *api.ModelRequest) {
	e.B = append(e.B, `{"messages":`...)
	e.messages(r.Messages)
	if r.System != nil {
		e.B = append(e.B, `,"system":`...)
		e.Str(*r.System)
	}
	// An empty list offers no tools and is kept; an absent one (nil)
	// offers the session's (api.ModelRequest's tools are omitzero).
	if r.Tools != nil {
		e.B = append(e.B, `,"tools":[`...)
		for i, t := range r.Tools {
			if i > 0 {
				e.B = append(e.B, ',')
			}
			e.B = append(e.B, `{"name":`...)
			e.Str(t.Name)
			e.B = append(e.B, `,"description":`...)
			e.Str(t.Description)
			e.B = append(e.B, `,"input_schema":`...)
			e.Raw(t.InputSchema)
			if len(t.OutputSchema) > 0 {
				e.B = append(e.B, `,"output_schema":`...)
				e.Raw(t.OutputSchema)
			}
			e.B = append(e.B, '}')
		}
		e.B = append(e.B, ']')
	}
	if len(r.ResponseFormat) > 0 {
		e.B = append(e.B, `,"response_format":`...)
		e.Raw(r.ResponseFormat)
	}
	if r.MaxOutputTokens != nil {
		e.B = append(e.B, `,"max_output_tokens":`...)
		e.Int(*r.MaxOutputTokens)
	}
	if len(r.Options) > 0 {
		e.B = append(e.B, `,"options":`...)
		e.Raw(r.Options)
	}
	e.B = append(e.B, '}')
}

func (d *decoder) modelResult(r *api.ModelResult) {
	d.Object(func(name string) {
		switch name {
		case "message":
			d.message(&r.Message)
		case "stop_reason":
			r.StopReason = api.StopReason(d.Str())
		case "usage":
			u := &r.Usage
			d.Object(func(name string) {
				switch name {
				case "input_tokens":
					u.InputTokens = d.IntPtr()
				case "output_tokens":
					u.OutputTokens = d.IntPtr()
				case "cache_creation_input_tokens":
					u.CacheCreationInputTokens = d.IntPtr()
				case "cache_read_input_tokens":
					u.CacheReadInputTokens = d.IntPtr()
				case "reasoning_tokens":
					u.ReasoningTokens = d.IntPtr()
				case "total_input_tokens":
					u.TotalInputTokens = d.IntPtr()
				case "provider_cost_usd":
					u.ProviderCostUSD = d.FloatPtr()
				default:
					d.Skip()
				}
			})
		default:
			d.Skip()
		}
	})
}
