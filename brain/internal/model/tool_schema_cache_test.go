package model

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestToolSchemaDecodedOnce: a tool's input schema is read once; the
// calls after the first that offer the same schema (every model call of
// a session offers its tools again) answer it without decoding it, and
// answer the same bytes.
func TestToolSchemaDecodedOnce(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
		`{"properties":{"path":{"type":"string"}},"required":["path"]}`,
		`{}`,
	} {
		raw := json.RawMessage(s)
		want := string(toolSchema(raw))
		if n := testing.AllocsPerRun(50, func() { toolSchema(raw) }); n != 0 {
			t.Errorf("%s: %v allocations a call once read, want 0", s, n)
		}
		if got := string(toolSchema(json.RawMessage(s))); got != want {
			t.Errorf("%s: answered %s, then %s", s, want, got)
		}
	}
}

// TestToolSchemaCacheBounded: however many distinct schemas are offered,
// the schemas kept stay within their bounds, every answer is still right,
// and concurrent calls agree.
func TestToolSchemaCacheBounded(t *testing.T) {
	c := &schemaCache{}
	schema := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"properties":{"p%d":{"type":"string"}}}`, i))
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3*maxSchemaEntries; i++ {
				got := c.typed(schema(i))
				want := fmt.Sprintf(`{"properties":{"p%d":{"type":"string"}},"type":"object"}`, i)
				if string(got) != want {
					t.Errorf("schema %d: %s, want %s", i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.m) > maxSchemaEntries || c.size > maxSchemaBytes {
		t.Fatalf("%d schemas of %d bytes kept, bounds %d and %d", len(c.m), c.size, maxSchemaEntries, maxSchemaBytes)
	}
	big := json.RawMessage(`{"description":"` + strings.Repeat("a", maxCachedSchema) + `"}`)
	before := len(c.m)
	c.mu.RUnlock()
	c.typed(big)
	c.mu.RLock()
	if len(c.m) != before {
		t.Errorf("a schema over %d bytes was kept", maxCachedSchema)
	}
}
