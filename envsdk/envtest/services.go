package envtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// HandlerFunc answers one service call in place of the built-in behaviour:
// status and an answer marshalled as JSON (a json.RawMessage is sent as is).
type HandlerFunc func(c Call) (status int, answer any)

// Handle replaces the behaviour of method (model, dispatch, environments or
// any other) for every later call. Authentication, grants and faults still
// apply.
func (b *Brain) Handle(method string, fn HandlerFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handlers[method] = fn
}

// DefaultModelAnswer is the ModelResult the model service answers unless
// replaced with Handle.
var DefaultModelAnswer = json.RawMessage(`{"message":{"role":"assistant","content":[{"type":"text","text":"ok"}]},"stop_reason":"end_turn","usage":{}}`)

func (b *Brain) process(c Call) answer {
	b.mu.Lock()
	fn := b.handlers[c.Method]
	b.mu.Unlock()
	if fn != nil {
		status, v := fn(c)
		data, err := marshal(v)
		if err != nil {
			return invalid(http.StatusInternalServerError, "internal", fmt.Errorf("envtest: handler answer: %w", err))
		}
		return answer{status: status, body: data}
	}
	switch c.Method {
	case envapi.MethodEmit:
		var in envapi.EmitInput
		if err := envapi.Strict(c.Input, &in); err != nil {
			return invalid(http.StatusUnprocessableEntity, "invalid_request", err)
		}
		// A private name (leading underscore) is reserved rather than
		// malformed, as Brain answers it.
		switch private := strings.HasPrefix(in.EventType, "_"); {
		case !private && !envapi.ValidIdentifier(in.EventType):
			return invalid(http.StatusUnprocessableEntity, "invalid_request", fmt.Errorf("event_type %q is not an identifier", in.EventType))
		case reserved(in.EventType):
			return invalid(http.StatusUnprocessableEntity, "reserved_name", fmt.Errorf("event_type %q is reserved", in.EventType))
		}
		return b.commit()
	case envapi.MethodResult:
		if c.Kind == KindContext {
			// A controller context's result is an actionable observation
			// {observation, content?}, as on the reporter.
			var out envapi.ReporterOutput
			if err := envapi.Strict(c.Input, &out); err != nil {
				return invalid(http.StatusUnprocessableEntity, "invalid_request", err)
			}
			if err := envapi.ValidateObservation(&out.Observation); err != nil {
				return invalid(http.StatusUnprocessableEntity, "invalid_request", err)
			}
			return b.commit()
		}
		if err := checkOutcome(c.Method, c.Input); err != nil {
			return invalid(http.StatusUnprocessableEntity, "invalid_request", err)
		}
		return b.commit()
	case envapi.MethodReturned, envapi.MethodFinish:
		if !isNull(c.Input) {
			if err := checkOutcome(c.Method, c.Input); err != nil {
				return invalid(http.StatusUnprocessableEntity, "invalid_request", err)
			}
		}
		return b.commit()
	case envapi.MethodTelemetry:
		return answer{status: http.StatusOK, body: []byte("null")}
	case envapi.MethodModel:
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(c.Input, &req); err != nil || req.Messages == nil {
			return invalid(http.StatusUnprocessableEntity, "invalid_request", fmt.Errorf("model input must be a ModelRequest object with messages"))
		}
		return answer{status: http.StatusOK, body: DefaultModelAnswer}
	case envapi.MethodEnvironments:
		req, err := envapi.DecodeControlRequest(c.Input)
		if err != nil {
			return invalid(http.StatusUnprocessableEntity, "invalid_request", err)
		}
		if req.Operation != envapi.ControlList {
			return invalid(http.StatusNotFound, "not_found", fmt.Errorf("no environment %+v", req.Environment))
		}
		return answer{status: http.StatusOK, body: []byte(`{"environments":[]}`)}
	case envapi.MethodEvents:
		var cursor uint64
		if err := json.Unmarshal(c.Input, &cursor); err != nil {
			return invalid(http.StatusUnprocessableEntity, "invalid_request", fmt.Errorf("events input must be a cursor number: %w", err))
		}
		data, _ := json.Marshal(map[string]any{"events": []any{}, "next_cursor": cursor})
		return answer{status: http.StatusOK, body: data}
	case envapi.MethodDispatch:
		return b.dispatch(c.Input)
	case envapi.MethodSetTranscript:
		var msgs []struct {
			Role string `json:"role"`
		}
		if err := json.Unmarshal(c.Input, &msgs); err != nil || msgs == nil {
			return invalid(http.StatusUnprocessableEntity, "invalid_request", fmt.Errorf("set_transcript input must be a message array"))
		}
		for i, m := range msgs {
			if m.Role != "user" && m.Role != "assistant" && m.Role != "developer" {
				return invalid(http.StatusUnprocessableEntity, "invalid_request", fmt.Errorf("message %d has role %q", i, m.Role))
			}
		}
		return b.commit()
	case envapi.MethodKVRead, envapi.MethodKVDelete:
		var key string
		if err := json.Unmarshal(c.Input, &key); err != nil || !envapi.ValidIdentifier(key) {
			return invalid(http.StatusUnprocessableEntity, "invalid_request", fmt.Errorf("%s input must be an identifier string", c.Method))
		}
		return b.kvKey(c, key)
	case envapi.MethodKVPut:
		var in envapi.KVPut
		if err := envapi.Strict(c.Input, &in); err != nil || !envapi.ValidIdentifier(in.Key) || in.Value == nil {
			return invalid(http.StatusUnprocessableEntity, "invalid_request", fmt.Errorf("kv_put input must be {key, value}"))
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.kv[c.Session] == nil {
			b.kv[c.Session] = map[string]json.RawMessage{}
		}
		b.kv[c.Session][in.Key] = bytes.Clone(in.Value)
		return committed(b.commitLocked())
	}
	return invalid(http.StatusUnprocessableEntity, "invalid_request", fmt.Errorf("method %q is not a service", c.Method))
}

func (b *Brain) kvKey(c Call, key string) answer {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.Method == envapi.MethodKVDelete {
		delete(b.kv[c.Session], key)
		return committed(b.commitLocked())
	}
	v, ok := b.kv[c.Session][key]
	if !ok {
		return answer{status: http.StatusOK, body: []byte("{}")}
	}
	data, _ := json.Marshal(map[string]json.RawMessage{"value": v})
	return answer{status: http.StatusOK, body: data}
}

// KV returns the value stored under key by kv_put in session.
func (b *Brain) KV(session, key string) (json.RawMessage, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.kv[session][key]
	return bytes.Clone(v), ok
}

func (b *Brain) dispatch(input json.RawMessage) answer {
	var calls []envapi.ToolInvocation
	if err := json.Unmarshal(input, &calls); err != nil || calls == nil {
		return invalid(http.StatusUnprocessableEntity, "invalid_request", fmt.Errorf("dispatch input must be an array of tool invocations"))
	}
	// Brain refuses a dispatch whose call_ids it cannot tell apart before
	// it starts any of its calls.
	ids := make(envapi.CallIDs, len(calls))
	for i, c := range calls {
		if err := ids.Add(i, c.CallID); err != nil {
			return invalid(http.StatusUnprocessableEntity, "invalid_request", err)
		}
	}
	b.mu.Lock()
	out := make([]envapi.ToolReturn, len(calls))
	for i, c := range calls {
		out[i] = envapi.ToolReturn{CallID: c.CallID, Sequence: b.commitLocked(), Events: []json.RawMessage{}, Finished: true}
	}
	b.mu.Unlock()
	data, _ := json.Marshal(out)
	return answer{status: http.StatusOK, body: data}
}

func (b *Brain) commit() answer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return committed(b.commitLocked())
}

func committed(seq uint64) answer {
	return answer{status: http.StatusOK, body: []byte(fmt.Sprint(seq)), committed: seq}
}

func invalid(status int, code string, err error) answer {
	return answer{status: status, body: errorBody(code, err.Error())}
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func marshal(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(v)
}
