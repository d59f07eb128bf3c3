package agentloop

import (
	"encoding/json"
)

// keyRaw encodes {"<k1>":s,"<k2>":raw}: EmitInput and KVPutInput.
func (e *encoder) keyRaw(k1, s, k2 string, raw json.RawMessage) {
	e.b = append(e.b, `{"`...)
	e.b = append(e.b, k1...)
	e.b = append(e.b, `":`...)
	e.str(s)
	e.b = append(e.b, `,"`...)
	e.b = append(e.b, k2...)
	e.b = append(e.b, `":`...)
	e.raw(raw)
	e.b = append(e.b, '}')
}

func (d *decoder) hostError(e *HostError) {
	d.object(func(name string) {
		switch name {
		case "code":
			e.Code = d.str()
		case "message":
			e.Message = d.str()
		case "retryable":
			e.Retryable = d.bool()
		case "details":
			e.Details = d.raw()
		case "ref":
			v := d.uint()
			if v > 1<<32-1 {
				d.fail("ref out of range")
			}
			e.Ref = uint32(v)
		default:
			d.skip()
		}
	})
}

// kvReadResult reads a KVReadResult: nil when the key is absent, the
// literal null when null is stored.
func (d *decoder) kvReadResult() (value json.RawMessage) {
	d.object(func(name string) {
		if name == "value" {
			value = d.raw()
			return
		}
		d.skip()
	})
	return value
}

// configuration reads the default loop's Configuration.
func (d *decoder) configuration(c *Configuration) {
	d.object(func(name string) {
		if name == "max_steps" {
			c.MaxSteps = int(d.int())
			return
		}
		d.skip()
	})
}
