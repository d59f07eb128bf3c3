package api

import "encoding/json"

// Status is a session's lifecycle state, folded from its journal.
type Status string

// Session statuses.
const (
	StatusCreating Status = "creating"
	StatusIdle     Status = "idle"
	StatusRunning  Status = "running"
	StatusEnding   Status = "ending"
	StatusEnded    Status = "ended"
	StatusFailed   Status = "failed"
)

// SessionSummary is the answer of create, get, send and end.
type SessionSummary struct {
	SessionID string `json:"session_id"`
	Status    Status `json:"status"`
	// LastSequence is the last committed journal sequence, a valid events
	// cursor.
	LastSequence uint64 `json:"last_sequence"`
}

// SessionList is the answer of GET /v1/sessions.
type SessionList struct {
	Sessions []SessionSummary `json:"sessions"`
}

// ModelConfig pins a session's model. APIKey is never journalled.
type ModelConfig struct {
	Provider string `json:"provider"`
	Name     string `json:"name"`
	APIKey   string `json:"api_key,omitempty"`
}

// Implementation names what an environment runs. Type "brain_builtin"
// with Name "default" selects the built-in loop; "brain_component" names an
// admitted module by ID and Entrypoint. Other fields are forwarded opaquely.
type Implementation = json.RawMessage

// Builtin implementation descriptor.
const (
	ImplementationBuiltin = "brain_builtin"
	BuiltinDefaultLoop    = "default"
	// BuiltinDefaultImplementation is the implementation Brain gives a
	// session that names no loop: the built-in default loop.
	BuiltinDefaultImplementation = `{"type":"` + ImplementationBuiltin + `","name":"` + BuiltinDefaultLoop + `"}`
)

// Agentloop selects the session's loop.
type Agentloop struct {
	Implementation json.RawMessage    `json:"implementation"`
	Configuration  json.RawMessage    `json:"configuration,omitempty"`
	Environment    string             `json:"environment,omitempty"`
	Environments   []EnvironmentGrant `json:"environments,omitempty"`
}

// EnvironmentGrant lets an extension control an environment.
type EnvironmentGrant struct {
	Environment string   `json:"environment"`
	Permissions []string `json:"permissions"`
	Methods     []string `json:"methods,omitempty"`
}

// Lifecycle values of an environment declaration.
const (
	LifecycleAutomatic = "automatic"
	LifecycleManual    = "manual"
)

// Environment drivers.
const (
	DriverBrain = "brain"
	DriverHost  = "host"
	DriverHTTP  = "http"
)

// Environment declares one environment binding of a session.
type Environment struct {
	Name          string                       `json:"name"`
	Driver        string                       `json:"driver"`
	URL           string                       `json:"url,omitempty"`
	HostID        string                       `json:"host_id,omitempty"`
	Credential    string                       `json:"credential,omitempty"`
	Configuration json.RawMessage              `json:"configuration,omitempty"`
	Lifecycle     string                       `json:"lifecycle,omitempty"`
	Methods       map[string]EnvironmentMethod `json:"methods,omitempty"`
	Template      *EnvironmentTemplate         `json:"template,omitempty"`
	Environments  []EnvironmentGrant           `json:"environments,omitempty"`
}

// EnvironmentMethod describes a method callable on an environment.
type EnvironmentMethod struct {
	Description  string          `json:"description"`
	Effect       string          `json:"effect,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// EnvironmentTemplate lets the environment be instantiated again.
type EnvironmentTemplate struct {
	MaxInstances        int             `json:"max_instances"`
	ConfigurationSchema json.RawMessage `json:"configuration_schema"`
}

// Placement says how an environment runs a tool.
type Placement struct {
	Implementation json.RawMessage `json:"implementation"`
}

// Tool declares a session tool and where it runs.
type Tool struct {
	Name         string               `json:"name"`
	Description  string               `json:"description"`
	InputSchema  json.RawMessage      `json:"input_schema"`
	OutputSchema json.RawMessage      `json:"output_schema,omitempty"`
	Placements   map[string]Placement `json:"placements"`
	Environments []EnvironmentGrant   `json:"environments,omitempty"`
}

// CreateSessionRequest is the body of POST /v1/sessions. Agentloop may be
// nil (the built-in default loop); Tools and Environments default to empty.
type CreateSessionRequest struct {
	Agentloop      *Agentloop      `json:"agentloop,omitempty"`
	Model          ModelConfig     `json:"model"`
	Tools          []Tool          `json:"tools"`
	Environments   []Environment   `json:"environments"`
	System         string          `json:"system,omitempty"`
	Transcript     []Message       `json:"transcript,omitempty"`
	IdleTTLMs      *int64          `json:"idle_ttl_ms,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
}

// MessageRequest is the body of POST /v1/sessions/{id}/messages.
type MessageRequest struct {
	Input UserInput `json:"input"`
}

// SessionTranscript is the answer of GET /v1/sessions/{id}/transcript.
type SessionTranscript struct {
	Messages        []Message `json:"messages"`
	ThroughSequence uint64    `json:"through_sequence"`
}

// TranscriptPart is the answer of GET /v1/sessions/{id}/transcript asked
// for part of the messages (the from and limit, or tail, query values):
// the messages of the part, the sequence they reflect, how many messages
// the whole transcript holds and the place of the first one returned
// among them (from 0).
type TranscriptPart struct {
	Messages        []Message `json:"messages"`
	ThroughSequence uint64    `json:"through_sequence"`
	Total           int       `json:"total"`
	Offset          int       `json:"offset"`
}

// MaxTranscriptPart bounds the messages of a TranscriptPart: the largest
// limit or tail a transcript read takes.
const MaxTranscriptPart = 1000
