package guestjson

import "github.com/brain-in-go/brain/brain/api"

// Outcome encodes a tool outcome envelope as json.Marshal does.
func (e *Encoder) Outcome(o *api.Outcome) {
	e.B = append(e.B, `{"status":`...)
	e.Str(o.Status)
	if len(o.Value) > 0 {
		e.B = append(e.B, `,"value":`...)
		e.Raw(o.Value)
	}
	if oe := o.Error; oe != nil {
		e.B = append(e.B, `,"error":{"code":`...)
		e.Str(oe.Code)
		e.B = append(e.B, `,"message":`...)
		e.Str(oe.Message)
		e.B = append(e.B, `,"retryable":`...)
		e.Bool(oe.Retryable)
		if len(oe.Details) > 0 {
			e.B = append(e.B, `,"details":`...)
			e.Raw(oe.Details)
		}
		e.B = append(e.B, '}')
	}
	if o.Message != "" {
		e.B = append(e.B, `,"message":`...)
		e.Str(o.Message)
	}
	if len(o.Content) > 0 {
		e.B = append(e.B, `,"content":`...)
		e.Raw(o.Content)
	}
	e.B = append(e.B, '}')
}

// Outcome reads a tool outcome envelope into o as json.Unmarshal does.
func (d *Decoder) Outcome(o *api.Outcome) {
	d.Object(func(name string) {
		switch name {
		case "status":
			o.Status = d.Str()
		case "value":
			o.Value = d.Raw()
		case "message":
			o.Message = d.Str()
		case "content":
			o.Content = d.Raw()
		case "error":
			if d.Null() {
				o.Error = nil
				return
			}
			if o.Error == nil {
				o.Error = &api.OutcomeError{}
			}
			oe := o.Error
			d.Object(func(name string) {
				switch name {
				case "code":
					oe.Code = d.Str()
				case "message":
					oe.Message = d.Str()
				case "retryable":
					oe.Retryable = d.Bool()
				case "details":
					oe.Details = d.Raw()
				default:
					d.Skip()
				}
			})
		default:
			d.Skip()
		}
	})
}
