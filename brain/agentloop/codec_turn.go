package agentloop

import (
	"encoding/json"

	"github.com/brain-in-go/brain/brain/api"
)

// turnOutput encodes a TurnOutput.
func (e *encoder) turnOutput(o *api.TurnOutput) {
	e.b = append(e.b, '{')
	if len(o.Result) > 0 {
		e.b = append(e.b, `"result":`...)
		e.raw(o.Result)
	}
	e.b = append(e.b, '}')
}

// turnError encodes {"error":{"message":...,"ref"?:...}}.
func (e *encoder) turnError(message string, ref uint32) {
	e.b = append(e.b, `{"error":{"message":`...)
	e.str(message)
	if ref != 0 {
		e.b = append(e.b, `,"ref":`...)
		e.uint(uint64(ref))
	}
	e.b = append(e.b, "}}"...)
}

func (d *decoder) event(ev *api.Event) {
	d.object(func(name string) {
		switch name {
		case "sequence":
			ev.Sequence = d.uint()
		case "recorded_at_ms":
			ev.RecordedAtMs = d.int()
		case "event_type":
			ev.EventType = d.str()
		case "data":
			ev.Data = d.raw()
		case "origin":
			if d.null() {
				ev.Origin = nil
				return
			}
			if ev.Origin == nil {
				ev.Origin = &api.EventOrigin{}
			}
			o := ev.Origin
			d.object(func(name string) {
				switch name {
				case "kind":
					o.Kind = d.str()
				case "sequence":
					o.Sequence = d.uint()
				case "environment":
					if d.null() {
						o.Environment = nil
						return
					}
					if o.Environment == nil {
						o.Environment = &api.EnvironmentRef{}
					}
					r := o.Environment
					d.object(func(name string) {
						switch name {
						case "name":
							r.Name = d.str()
						case "sequence":
							r.Sequence = d.uint()
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

func (d *decoder) events() []api.Event {
	var out []api.Event
	if d.array(func() {
		out = append(out, api.Event{})
		d.event(&out[len(out)-1])
	}) && out == nil {
		out = []api.Event{}
	}
	return out
}

func (d *decoder) turnInput(in *api.TurnInput) {
	d.object(func(name string) {
		switch name {
		case "input":
			if d.null() {
				in.Input = nil
				return
			}
			if in.Input == nil {
				in.Input = &api.UserInput{}
			}
			u := in.Input
			d.object(func(name string) {
				switch name {
				case "message":
					u.Message = d.str()
				case "media":
					u.Media = d.media()
				default:
					d.skip()
				}
			})
		case "transcript":
			in.Transcript = d.messages()
		case "kv":
			if d.null() {
				in.KV = nil
				return
			}
			if in.KV == nil {
				in.KV = map[string]json.RawMessage{}
			}
			d.members(func(key string) { in.KV[key] = d.raw() })
		case "events":
			in.Events = d.events()
		case "configuration":
			in.Configuration = d.raw()
		case "system":
			in.System = d.str()
		case "tools":
			in.Tools = d.tools()
		case "runtime":
			d.object(func(name string) {
				switch name {
				case "logical_time_ms":
					in.Runtime.LogicalTimeMs = d.int()
				case "deterministic_seed":
					in.Runtime.DeterministicSeed = d.bytes()
				default:
					d.skip()
				}
			})
		default:
			d.skip()
		}
	})
}

func (d *decoder) tools() []api.ActivationTool {
	var out []api.ActivationTool
	if d.array(func() {
		var t api.ActivationTool
		d.object(func(name string) {
			switch name {
			case "name":
				t.Name = d.str()
			case "description":
				t.Description = d.str()
			case "input_schema":
				t.InputSchema = d.raw()
			case "output_schema":
				t.OutputSchema = d.raw()
			case "environments":
				t.Environments = d.strings()
			default:
				d.skip()
			}
		})
		out = append(out, t)
	}) && out == nil {
		out = []api.ActivationTool{}
	}
	return out
}

func (d *decoder) eventPage(p *api.EventPage) {
	d.object(func(name string) {
		switch name {
		case "events":
			p.Events = d.events()
		case "next_cursor":
			p.NextCursor = d.uint()
		default:
			d.skip()
		}
	})
}
