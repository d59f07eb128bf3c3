package model

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// benchTools are tools of the size an agent offers: sixteen, each with a
// schema of a few properties, their descriptions and an enumeration; half
// of them name no type, as environments often give them.
func benchTools() []api.ToolDefinition {
	tools := make([]api.ToolDefinition, 16)
	for i := range tools {
		var props []string
		for p := 0; p < 8; p++ {
			props = append(props, fmt.Sprintf(`"arg_%d":{"type":"string","description":"The %d-th argument of tool %d, which the tool reads as it is given.","enum":["one","two","three","four"]}`, p, p, i))
		}
		schema := `{"properties":{` + strings.Join(props, ",") + `},"required":["arg_0","arg_1"],"additionalProperties":false}`
		if i%2 == 0 {
			schema = `{"type":"object",` + schema[1:]
		}
		tools[i] = api.ToolDefinition{Name: fmt.Sprintf("tool_%d", i), Description: fmt.Sprintf("Tool number %d.", i), InputSchema: json.RawMessage(schema)}
	}
	return tools
}

// BenchmarkPrepareTools: Prepare of a short conversation that offers
// benchTools, per dialect: what every model call of a session pays to
// build its tools.
func BenchmarkPrepareTools(b *testing.B) {
	p, err := New(Config{OpenAIBaseURL: "http://127.0.0.1:1/v1", AnthropicBaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Tools: benchTools(), Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Run the tools."})}}
	for _, d := range dialects {
		c, err := p.Open(Spec{Provider: d.provider, Name: d.model})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(d.provider, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Prepare(c, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkToolSchema: one tool's schema as the dialects take it, for a
// schema that names its type and one that does not.
func BenchmarkToolSchema(b *testing.B) {
	tools := benchTools()
	for _, tc := range []struct {
		name   string
		schema json.RawMessage
	}{{"typed", tools[0].InputSchema}, {"untyped", tools[1].InputSchema}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				toolSchema(tc.schema)
			}
		})
	}
}
