package envsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Ctx is what a provider sees of one operation.
type Ctx struct {
	// SessionID is the session the operation belongs to.
	SessionID string
	// Environment is the environment's name in the session.
	Environment string
	// Sequence is the journal record that started this operation.
	Sequence uint64
	// Binding is the pinned binding reference; when the command carried
	// none it is {Environment, 1}.
	Binding envapi.EnvironmentRef
	// Template names the template the environment was created from.
	Template string
	// Request is the decoded request.
	Request envapi.Request
	// RawConfiguration is the setup request's configuration for a setup,
	// else the operation's current configuration (nil when absent).
	RawConfiguration json.RawMessage

	ctx      context.Context
	caller   *caller
	opGrant  *envapi.Grant
	reporter *Reporter
	closed   atomic.Bool
}

// Context ends when the operation returns, when its deadline passes or when
// Brain cancels it. context.Cause tells which.
func (c *Ctx) Context() context.Context { return c.ctx }

// String shows what the operation is (its session, environment,
// sequence, binding and request), without the tokens of the grants it
// carries, and without reaching into its context, which another goroutine
// may be changing.
func (c *Ctx) String() string {
	if c == nil {
		return "envsdk.Ctx(nil)"
	}
	s := fmt.Sprintf("envsdk.Ctx{session: %s, environment: %s, sequence: %d, binding: %s/%d, request: %s",
		c.SessionID, c.Environment, c.Sequence, c.Binding.Name, c.Binding.Sequence, c.Request.Type)
	switch {
	case c.Request.Name != "":
		s += ", name: " + c.Request.Name
	case c.Request.TargetSequence != 0:
		s += fmt.Sprintf(", target_sequence: %d", c.Request.TargetSequence)
	}
	if c.Request.Callback != nil {
		s += ", callback: " + c.Request.Callback.String()
	}
	return s + "}"
}

// GoString is String for %#v.
func (c *Ctx) GoString() string { return c.String() }

// LogValue logs what the operation is, without the tokens of the grants
// it carries: log/slog's JSON handler would otherwise encode its request's
// callback grant as its wire JSON, token included.
func (c *Ctx) LogValue() slog.Value {
	if c == nil {
		return slog.AnyValue(nil)
	}
	attrs := []slog.Attr{
		slog.String("session_id", c.SessionID),
		slog.String("environment", c.Environment),
		slog.Uint64("sequence", c.Sequence),
		slog.Any("binding", c.Binding),
		slog.Any("request", c.Request),
	}
	if c.Template != "" {
		attrs = append(attrs, slog.String("template", c.Template))
	}
	if c.RawConfiguration != nil {
		attrs = append(attrs, slog.Any("configuration", c.RawConfiguration))
	}
	return slog.GroupValue(attrs...)
}

// BindingKey names the binding: "<session>/<environment>", plus
// "/<binding sequence>" when the incarnation is not the first, so a
// replaced environment gets a fresh key.
func (c *Ctx) BindingKey() string {
	return bindingKey(c.SessionID, c.Environment, c.Binding.Sequence)
}

// BindingKey names the binding of op like Ctx.BindingKey.
func BindingKey(op envapi.Operation) string {
	seq := uint64(1)
	if op.Binding != nil {
		seq = op.Binding.Sequence
	}
	return bindingKey(op.SessionID, op.Environment, seq)
}

func bindingKey(session, env string, seq uint64) string {
	k := session + "/" + env
	if seq != 1 {
		k += "/" + strconv.FormatUint(seq, 10)
	}
	return k
}

// DecodeConfiguration decodes the configuration strictly into v (unknown
// fields and wrong types are errors) and checks v's validator tags.
// Absent or null configuration decodes as {}. The error is an *Error with
// code invalid_configuration whose message and details name the field.
func (c *Ctx) DecodeConfiguration(v any) error {
	data := c.RawConfiguration
	if len(data) == 0 || string(data) == "null" {
		data = json.RawMessage("{}")
	}
	if err := envapi.Strict(data, v); err != nil {
		var fe *envapi.FieldError
		if errors.As(err, &fe) {
			field := fe.Field
			if field == "" {
				field = "configuration"
			} else {
				field = "configuration." + field
			}
			return Failf(envapi.CodeInvalidConfiguration, "%s: %s", field, fe.Reason).WithDetails(map[string]string{"field": field})
		}
		return Failf(envapi.CodeInvalidConfiguration, "configuration: %v", err)
	}
	return nil
}

// Reporter returns the binding's reporter, or nil when the operation
// carried no reporter grant. The Reporter may be kept after the operation
// returns.
func (c *Ctx) Reporter() *Reporter { return c.reporter }

// Emit appends an extension event through the operation's context grant.
func (c *Ctx) Emit(ctx context.Context, eventType string, data any) (uint64, error) {
	d, err := marshalInput(data)
	if err != nil {
		return 0, err
	}
	raw, err := c.contextCall(ctx, envapi.MethodEmit, envapi.EmitInput{EventType: eventType, Data: d})
	if err != nil {
		return 0, err
	}
	return parseSequence(envapi.MethodEmit, raw)
}

// EmitResult appends an actionable observation through the operation's
// context grant.
func (c *Ctx) EmitResult(ctx context.Context, obs envapi.Observation, content any) (uint64, error) {
	if err := envapi.ValidateObservation(&obs); err != nil {
		return 0, err
	}
	out := envapi.ReporterOutput{Observation: obs}
	if content != nil {
		raw, err := marshalInput(content)
		if err != nil {
			return 0, err
		}
		out.Content = raw
	}
	raw, err := c.contextCall(ctx, envapi.MethodResult, out)
	if err != nil {
		return 0, err
	}
	return parseSequence(envapi.MethodResult, raw)
}

// Environments sends a control request through the operation's context
// grant, bounded by the environment's own grants.
func (c *Ctx) Environments(ctx context.Context, req envapi.ControlRequest) (json.RawMessage, error) {
	return c.contextCall(ctx, envapi.MethodEnvironments, req)
}

func (c *Ctx) contextCall(ctx context.Context, method string, input any) (json.RawMessage, error) {
	// The context closes when the operation returns, and as soon as it is
	// stopped (cancelled, past its deadline), even while the provider's
	// code is still running.
	if c.closed.Load() || c.ctx.Err() != nil {
		return nil, ErrClosed
	}
	if c.opGrant == nil {
		return nil, ErrNotGranted
	}
	return c.caller.call(ctx, c.opGrant, method, input)
}
