package agentloop

import (
	"encoding/json"

	"github.com/brain-in-go/brain/brain/api"
)

// turnOutput encodes a TurnOutput.
func (e *encoder) turnOutput(o *api.TurnOutput) {
	e.B = append(e.B, '{')
	if len(o.Result) > 0 {
		e.B = append(e.B, `"result":`...)
		e.Raw(o.Result)
	}
	e.B = append(e.B, '}')
}

// turnError encodes {"error":{"message":...,"ref"?:...}}.
func (e *encoder) turnError(message string, ref uint32) {
	e.B = append(e.B, `{"error":{"message":`...)
	e.Str(message)
	if ref != 0 {
		e.B = append(e.B, `,"ref":`...)
		e.Uint(uint64(ref))
	}
	e.B = append(e.B, "}}"...)
}

func (d *decoder) event(ev *api.Event) {
	d.Object(func(name string) {
		switch name {
		case "sequence":
			ev.Sequence = d.Uint()
		case "recorded_at_ms":
			ev.RecordedAtMs = d.Int()
		case "event_type":
			ev.EventType = d.Str()
		case "data":
			ev.Data = d.Raw()
		case "origin":
			if d.Null() {
				ev.Origin = nil
				return
			}
			if ev.Origin == nil {
				ev.Origin = &api.EventOrigin{}
			}
			o := ev.Origin
			d.Object(func(name string) {
				switch name {
				case "kind":
					o.Kind = d.Str()
				case "sequence":
					o.Sequence = d.Uint()
				case "environment":
					if d.Null() {
						o.Environment = nil
						return
					}
					if o.Environment == nil {
						o.Environment = &api.EnvironmentRef{}
					}
					r := o.Environment
					d.Object(func(name string) {
						switch name {
						case "name":
							r.Name = d.Str()
						case "sequence":
							r.Sequence = d.Uint()
						default:
							d.Skip()
						}
					})
				default:
					d.Skip()
				}
			})
		default:
			d.Skip()
		}
	})
}

func (d *decoder) events() []api.Event {
	var out []api.Event
	if d.Array(func() {
		out = append(out, api.Event{})
		d.event(&out[len(out)-1])
	}) && out == nil {
		out = []api.Event{}
	}
	return out
}

func (d *decoder) turnInput(in *api.TurnInput) {
	d.Object(func(name string) {
		switch name {
		case "input":
			if d.Null() {
				in.Input = nil
				return
			}
			if in.Input == nil {
				in.Input = &api.UserInput{}
			}
			u := in.Input
			d.Object(func(name string) {
				switch name {
				case "message":
					u.Message = d.Str()
				case "media":
					u.Media = d.media()
				default:
					d.Skip()
				}
			})
		case "transcript":
			in.Transcript = d.messages()
		case "kv":
			if d.Null() {
				in.KV = nil
				return
			}
			if in.KV == nil {
				in.KV = map[string]json.RawMessage{}
			}
			d.Members(func(key string) { in.KV[key] = d.Raw() })
		case "events":
			in.Events = d.events()
		case "configuration":
			in.Configuration = d.Raw()
		case "system":
			in.System = d.Str()
		case "tools":
			in.Tools = d.tools()
		case "runtime":
			d.Object(func(name string) {
				switch name {
				case "logical_time_ms":
					in.Runtime.LogicalTimeMs = d.Int()
				case "deterministic_seed":
					in.Runtime.DeterministicSeed = d.Bytes()
				default:
					d.Skip()
				}
			})
		default:
			d.Skip()
		}
	})
}

func (d *decoder) tools() []api.ActivationTool {
	var out []api.ActivationTool
	if d.Array(func() {
		var t api.ActivationTool
		d.Object(func(name string) {
			switch name {
			case "name":
				t.Name = d.Str()
			case "description":
				t.Description = d.Str()
			case "input_schema":
				t.InputSchema = d.Raw()
			case "output_schema":
				t.OutputSchema = d.Raw()
			case "environments":
				t.Environments = d.Strings()
			default:
				d.Skip()
			}
		})
		out = append(out, t)
	}) && out == nil {
		out = []api.ActivationTool{}
	}
	return out
}

func (d *decoder) eventPage(p *api.EventPage) {
	d.Object(func(name string) {
		switch name {
		case "events":
			p.Events = d.events()
		case "next_cursor":
			p.NextCursor = d.Uint()
		default:
			d.Skip()
		}
	})
}
