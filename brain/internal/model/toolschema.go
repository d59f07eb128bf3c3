package model

import (
	"bytes"
	"encoding/json"
	"sync"
)

// toolSchema is a tool's input schema as the dialects take it: a JSON
// Schema of type "object", which OpenAI and Anthropic require at its top.
// An absent schema is one of no properties; an object that names no type
// ({}, or properties alone) is given type "object" (and no properties
// when it has none), which changes nothing a tool receives: a tool input
// is always an object. Any other schema goes as it is.
//
// A session offers the same tools on every model call: a schema is read
// once and its answer kept (see schemaCache). The answer is shared and
// never modified.
func toolSchema(s json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(s)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return schemas.typed(s)
}

// withObjectType is toolSchema's answer for a schema that is not absent,
// read anew; nil when the schema goes as it is.
func withObjectType(s json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(s)
	var m map[string]json.RawMessage
	if t[0] != '{' || json.Unmarshal(t, &m) != nil || m == nil {
		return nil
	}
	if _, ok := m["type"]; ok {
		return nil
	}
	m["type"] = json.RawMessage(`"object"`)
	if _, ok := m["properties"]; !ok {
		m["properties"] = json.RawMessage(`{}`)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// Bounds of the schemas kept: how many, their bytes in all (as given and
// as answered), and the largest kept (a larger one is read on every
// call).
const (
	maxSchemaEntries = 1024
	maxSchemaBytes   = 8 << 20
	maxCachedSchema  = 64 << 10
)

// schemas are the schemas of every client: an answer depends on the
// schema's bytes alone.
var schemas schemaCache

// schemaCache keeps toolSchema's answers by the schema as given, within
// the bounds above; once full, schemas kept are dropped at random to make
// room. It is safe for concurrent use.
type schemaCache struct {
	mu   sync.RWMutex
	m    map[string]json.RawMessage // nil: the schema goes as it is
	size int
}

// typed answers toolSchema's answer for s (not absent).
func (c *schemaCache) typed(s json.RawMessage) json.RawMessage {
	c.mu.RLock()
	out, ok := c.m[string(s)]
	c.mu.RUnlock()
	if !ok {
		out = withObjectType(s)
		c.put(s, out)
	}
	if out == nil {
		return s
	}
	return out
}

// put keeps out as the answer for s, when s is small enough to keep.
func (c *schemaCache) put(s, out json.RawMessage) {
	n := len(s) + len(out)
	if len(s) > maxCachedSchema {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[string(s)]; ok {
		return
	}
	if c.m == nil {
		c.m = map[string]json.RawMessage{}
	}
	for k, v := range c.m {
		if len(c.m) < maxSchemaEntries && c.size+n <= maxSchemaBytes {
			break
		}
		c.size -= len(k) + len(v)
		delete(c.m, k)
	}
	c.m[string(s)] = out
	c.size += n
}
