package agentloop

import (
	"encoding/json"
	"fmt"
)

// keyRaw encodes {"<k1>":s,"<k2>":raw}: EmitInput and KVPutInput.
func (e *encoder) keyRaw(k1, s, k2 string, raw json.RawMessage) {
	e.B = append(e.B, `{"`...)
	e.B = append(e.B, k1...)
	e.B = append(e.B, `":`...)
	e.Str(s)
	e.B = append(e.B, `,"`...)
	e.B = append(e.B, k2...)
	e.B = append(e.B, `":`...)
	e.Raw(raw)
	e.B = append(e.B, '}')
}

func (d *decoder) hostError(e *HostError) {
	d.Object(func(name string) {
		switch name {
		case "code":
			e.Code = d.Str()
		case "message":
			e.Message = d.Str()
		case "retryable":
			e.Retryable = d.Bool()
		case "details":
			e.Details = d.Raw()
		case "ref":
			v := d.Uint()
			if v > 1<<32-1 {
				d.Fail("ref out of range")
			}
			e.Ref = uint32(v)
		default:
			d.Skip()
		}
	})
}

// kvReadResult reads a KVReadResult: nil when the key is absent, the
// literal null when null is stored.
func (d *decoder) kvReadResult() (value json.RawMessage) {
	d.Object(func(name string) {
		if name == "value" {
			value = d.Raw()
			return
		}
		d.Skip()
	})
	return value
}

// configuration reads the default loop's Configuration.
func (d *decoder) configuration(c *Configuration) {
	d.Object(func(name string) {
		if name == "max_steps" {
			c.MaxSteps = int(d.Int())
			if d.Err != nil {
				d.Err = fmt.Errorf("max_steps: %w", d.Err)
			}
			return
		}
		d.Skip()
	})
}
