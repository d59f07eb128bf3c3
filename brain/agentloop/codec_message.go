package agentloop

import (
	"github.com/brain-in-go/brain/brain/api"
)

func (e *encoder) media(m api.Media) {
	first := true
	e.B = append(e.B, '{')
	e.Key("type", &first)
	e.Str(m.Type)
	e.Key("url", &first)
	e.Str(m.URL)
	if m.MediaType != "" {
		e.Key("media_type", &first)
		e.Str(m.MediaType)
	}
	e.B = append(e.B, '}')
}

func (e *encoder) block(c *api.ContentBlock) {
	first := true
	e.B = append(e.B, '{')
	e.Key("type", &first)
	e.Str(c.Type)
	for _, f := range [...]struct {
		name, v string
	}{{"text", c.Text}, {"url", c.URL}, {"media_type", c.MediaType}, {"format", c.Format}} {
		if f.v != "" {
			e.Key(f.name, &first)
			e.Str(f.v)
		}
	}
	if len(c.Data) > 0 {
		e.Key("data", &first)
		e.Raw(c.Data)
	}
	if c.ID != "" {
		e.Key("id", &first)
		e.Str(c.ID)
	}
	if c.Name != "" {
		e.Key("name", &first)
		e.Str(c.Name)
	}
	if len(c.Input) > 0 {
		e.Key("input", &first)
		e.Raw(c.Input)
	}
	if c.ToolUseID != "" {
		e.Key("tool_use_id", &first)
		e.Str(c.ToolUseID)
	}
	if len(c.Content) > 0 {
		e.Key("content", &first)
		e.Raw(c.Content)
	}
	if c.IsError != nil {
		e.Key("is_error", &first)
		e.Bool(*c.IsError)
	}
	if len(c.Media) > 0 {
		e.Key("media", &first)
		e.B = append(e.B, '[')
		for i, m := range c.Media {
			if i > 0 {
				e.B = append(e.B, ',')
			}
			e.media(m)
		}
		e.B = append(e.B, ']')
	}
	e.B = append(e.B, '}')
}

func (e *encoder) message(m *api.Message) {
	e.B = append(e.B, `{"role":`...)
	e.Str(m.Role)
	e.B = append(e.B, `,"content":`...)
	if m.Content == nil {
		e.B = append(e.B, "null"...)
	} else {
		e.B = append(e.B, '[')
		for i := range m.Content {
			if i > 0 {
				e.B = append(e.B, ',')
			}
			e.block(&m.Content[i])
		}
		e.B = append(e.B, ']')
	}
	e.B = append(e.B, '}')
}

func (e *encoder) messages(ms []api.Message) {
	if ms == nil {
		e.B = append(e.B, "null"...)
		return
	}
	e.B = append(e.B, '[')
	for i := range ms {
		if i > 0 {
			e.B = append(e.B, ',')
		}
		e.message(&ms[i])
	}
	e.B = append(e.B, ']')
}

func (d *decoder) media() []api.Media {
	var out []api.Media
	if d.Array(func() {
		var m api.Media
		d.Object(func(name string) {
			switch name {
			case "type":
				m.Type = d.Str()
			case "url":
				m.URL = d.Str()
			case "media_type":
				m.MediaType = d.Str()
			default:
				d.Skip()
			}
		})
		out = append(out, m)
	}) && out == nil {
		out = []api.Media{}
	}
	return out
}

func (d *decoder) block(c *api.ContentBlock) {
	d.Object(func(name string) {
		switch name {
		case "type":
			c.Type = d.Str()
		case "text":
			c.Text = d.Str()
		case "url":
			c.URL = d.Str()
		case "media_type":
			c.MediaType = d.Str()
		case "format":
			c.Format = d.Str()
		case "data":
			c.Data = d.Raw()
		case "id":
			c.ID = d.Str()
		case "name":
			c.Name = d.Str()
		case "input":
			c.Input = d.Raw()
		case "tool_use_id":
			c.ToolUseID = d.Str()
		case "content":
			c.Content = d.Raw()
		case "is_error":
			if d.Null() {
				c.IsError = nil
			} else {
				v := d.Bool()
				c.IsError = &v
			}
		case "media":
			c.Media = d.media()
		default:
			d.Skip()
		}
	})
}

func (d *decoder) message(m *api.Message) {
	d.Object(func(name string) {
		switch name {
		case "role":
			m.Role = d.Str()
		case "content":
			m.Content = nil
			if d.Array(func() {
				m.Content = append(m.Content, api.ContentBlock{})
				d.block(&m.Content[len(m.Content)-1])
			}) && m.Content == nil {
				m.Content = []api.ContentBlock{}
			}
		default:
			d.Skip()
		}
	})
}

func (d *decoder) messages() []api.Message {
	var out []api.Message
	if d.Array(func() {
		out = append(out, api.Message{})
		d.message(&out[len(out)-1])
	}) && out == nil {
		out = []api.Message{}
	}
	return out
}
