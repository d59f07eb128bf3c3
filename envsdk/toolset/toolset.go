package toolset

import (
	"encoding/json"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Names of the standard tools, as in the descriptor {"tool": NAME}.
const (
	ToolCommand = "command"
	ToolRead    = "read"
	ToolWrite   = "write"
	ToolList    = "list"
	ToolEdit    = "edit"
)

// Tools lists the names of the standard tools.
func Tools() []string { return []string{ToolCommand, ToolRead, ToolWrite, ToolList, ToolEdit} }

// Descriptor is the implementation of an execute of a standard tool.
type Descriptor struct {
	Tool string `json:"tool" validate:"required"`
}

// Implementation returns the descriptor {"tool": name} as JSON.
func Implementation(name string) json.RawMessage {
	raw, _ := json.Marshal(Descriptor{Tool: name})
	return raw
}

// Select decodes an execute's implementation as a Descriptor and returns
// the entry of tools it names. A malformed descriptor, or a name tools does
// not hold, is answered unsupported.
func Select[T any](implementation json.RawMessage, tools map[string]T) (T, error) {
	var zero T
	var d Descriptor
	if err := envapi.Strict(implementation, &d); err != nil {
		return zero, envsdk.Failf(envapi.CodeUnsupported, "unsupported implementation %.200s: want {\"tool\": NAME}", implementation)
	}
	t, ok := tools[d.Tool]
	if !ok {
		return zero, envsdk.Failf(envapi.CodeUnsupported, "unsupported tool %q", d.Tool)
	}
	return t, nil
}
