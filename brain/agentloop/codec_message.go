package agentloop

import (
	"github.com/brain-in-go/brain/brain/api"
)

// sizeMessages estimates the encoded size of ms.
func sizeMessages(ms []api.Message) int {
	n := 2
	for _, m := range ms {
		n += 32 + len(m.Role)
		for _, c := range m.Content {
			n += 48 + len(c.Type) + len(c.Text) + len(c.URL) + len(c.MediaType) + len(c.Format) + len(c.Data) +
				len(c.ID) + len(c.Name) + len(c.Input) + len(c.ToolUseID) + len(c.Content) + 64*len(c.Media)
		}
	}
	return n
}

func (e *encoder) media(m api.Media) {
	first := true
	e.b = append(e.b, '{')
	e.key("type", &first)
	e.str(m.Type)
	e.key("url", &first)
	e.str(m.URL)
	if m.MediaType != "" {
		e.key("media_type", &first)
		e.str(m.MediaType)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) block(c *api.ContentBlock) {
	first := true
	e.b = append(e.b, '{')
	e.key("type", &first)
	e.str(c.Type)
	for _, f := range [...]struct {
		name, v string
	}{{"text", c.Text}, {"url", c.URL}, {"media_type", c.MediaType}, {"format", c.Format}} {
		if f.v != "" {
			e.key(f.name, &first)
			e.str(f.v)
		}
	}
	if len(c.Data) > 0 {
		e.key("data", &first)
		e.raw(c.Data)
	}
	if c.ID != "" {
		e.key("id", &first)
		e.str(c.ID)
	}
	if c.Name != "" {
		e.key("name", &first)
		e.str(c.Name)
	}
	if len(c.Input) > 0 {
		e.key("input", &first)
		e.raw(c.Input)
	}
	if c.ToolUseID != "" {
		e.key("tool_use_id", &first)
		e.str(c.ToolUseID)
	}
	if len(c.Content) > 0 {
		e.key("content", &first)
		e.raw(c.Content)
	}
	if c.IsError != nil {
		e.key("is_error", &first)
		e.bool(*c.IsError)
	}
	if len(c.Media) > 0 {
		e.key("media", &first)
		e.b = append(e.b, '[')
		for i, m := range c.Media {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.media(m)
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) message(m *api.Message) {
	e.b = append(e.b, `{"role":`...)
	e.str(m.Role)
	e.b = append(e.b, `,"content":`...)
	if m.Content == nil {
		e.b = append(e.b, "null"...)
	} else {
		e.b = append(e.b, '[')
		for i := range m.Content {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.block(&m.Content[i])
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) messages(ms []api.Message) {
	if ms == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i := range ms {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.message(&ms[i])
	}
	e.b = append(e.b, ']')
}

func (d *decoder) media() []api.Media {
	var out []api.Media
	if d.array(func() {
		var m api.Media
		d.object(func(name string) {
			switch name {
			case "type":
				m.Type = d.str()
			case "url":
				m.URL = d.str()
			case "media_type":
				m.MediaType = d.str()
			default:
				d.skip()
			}
		})
		out = append(out, m)
	}) && out == nil {
		out = []api.Media{}
	}
	return out
}

func (d *decoder) block(c *api.ContentBlock) {
	d.object(func(name string) {
		switch name {
		case "type":
			c.Type = d.str()
		case "text":
			c.Text = d.str()
		case "url":
			c.URL = d.str()
		case "media_type":
			c.MediaType = d.str()
		case "format":
			c.Format = d.str()
		case "data":
			c.Data = d.raw()
		case "id":
			c.ID = d.str()
		case "name":
			c.Name = d.str()
		case "input":
			c.Input = d.raw()
		case "tool_use_id":
			c.ToolUseID = d.str()
		case "content":
			c.Content = d.raw()
		case "is_error":
			if d.null() {
				c.IsError = nil
			} else {
				v := d.bool()
				c.IsError = &v
			}
		case "media":
			c.Media = d.media()
		default:
			d.skip()
		}
	})
}

func (d *decoder) message(m *api.Message) {
	d.object(func(name string) {
		switch name {
		case "role":
			m.Role = d.str()
		case "content":
			m.Content = nil
			if d.array(func() {
				m.Content = append(m.Content, api.ContentBlock{})
				d.block(&m.Content[len(m.Content)-1])
			}) && m.Content == nil {
				m.Content = []api.ContentBlock{}
			}
		default:
			d.skip()
		}
	})
}

func (d *decoder) messages() []api.Message {
	var out []api.Message
	if d.array(func() {
		out = append(out, api.Message{})
		d.message(&out[len(out)-1])
	}) && out == nil {
		out = []api.Message{}
	}
	return out
}
