package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// schemaTypeRequired answers as the providers do a request offering a tool
// whose input schema has no top-level type "object" (Anthropic:
// "tools.0.custom.input_schema.type: Field required"; OpenAI: "schema must
// be a JSON Schema of 'type: \"object\"'"); any other request gets next.
// It records the schemas offered.
func schemaTypeRequired(d dialect, seen *[]map[string]any, next func(http.ResponseWriter, *recorded)) func(http.ResponseWriter, *recorded) {
	return func(w http.ResponseWriter, r *recorded) {
		tools, _ := r.Body["tools"].([]any)
		for i, raw := range tools {
			tool, _ := raw.(map[string]any)
			var schema map[string]any
			name := tool["name"]
			switch d.provider {
			case ProviderAnthropic:
				schema, _ = tool["input_schema"].(map[string]any)
			case ProviderOpenAIChat:
				fn, _ := tool["function"].(map[string]any)
				schema, _ = fn["parameters"].(map[string]any)
				name = fn["name"]
			default:
				schema, _ = tool["parameters"].(map[string]any)
			}
			*seen = append(*seen, schema)
			if schema["type"] != "object" {
				msg := fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'.", name)
				if d.provider == ProviderAnthropic {
					msg = fmt.Sprintf("tools.%d.custom.input_schema.type: Field required", i)
				}
				status(http.StatusBadRequest, d.errorBody("invalid_request_error", msg))(w, r)
				return
			}
		}
		next(w, r)
	}
}

// TestToolSchemaWithoutType: a tool whose input schema is an object that
// names no type ({} for a tool without parameters, or properties alone, as
// environments and tool servers often give them) is offered with type
// "object", which every dialect requires; the schema keeps the rest.
func TestToolSchemaWithoutType(t *testing.T) {
	tools := []api.ToolDefinition{
		{Name: "list_files", Description: "List the files", InputSchema: json.RawMessage(`{}`)},
		{Name: "read_file", Description: "Read a file", InputSchema: json.RawMessage(`{"properties":{"path":{"type":"string"}},"required":["path"]}`)},
		weatherTool,
	}
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			f, c := open(t, d, Limits{})
			var seen []map[string]any
			f.set(schemaTypeRequired(d, &seen, sse(d.render(turn{text: []string{"ok"}, stop: api.StopEndTurn}))))
			if _, err := c.Call(context.Background(), Request{Tools: tools, Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(seen)
			sameJSON(t, got, `[
			 {"type":"object","properties":{}},
			 {"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},
			 `+string(weatherTool.InputSchema)+`]`)
		})
	}
}
