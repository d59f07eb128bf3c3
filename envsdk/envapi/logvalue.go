package envapi

import "log/slog"

// The grants an operation carries hold credentials (their tokens). A
// Grant never shows its token when printed or logged, but log/slog's JSON
// handler encodes a struct that holds a *Grant as its wire JSON, token
// included: Command, Operation and Request therefore log as groups whose
// grants are logged by Grant.LogValue. Their wire encoding (json.Marshal)
// is unchanged.

// LogValue logs the command without the tokens of its grants.
func (c Command) LogValue() slog.Value {
	return slog.GroupValue(slog.String("contract", c.Contract), slog.Any("operation", c.Operation))
}

// LogValue logs the operation without the tokens of its grants.
func (o Operation) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("session_id", o.SessionID),
		slog.String("environment", o.Environment),
		slog.Uint64("sequence", o.Sequence),
		slog.Any("request", o.Request),
	}
	if o.Binding != nil {
		attrs = append(attrs, slog.Any("binding", *o.Binding))
	}
	if o.Configuration != nil {
		attrs = append(attrs, slog.Any("configuration", o.Configuration))
	}
	if o.Template != "" {
		attrs = append(attrs, slog.String("template", o.Template))
	}
	if o.Context != nil {
		attrs = append(attrs, slog.Any("context", o.Context))
	}
	if o.Reporter != nil {
		attrs = append(attrs, slog.Any("reporter", o.Reporter))
	}
	return slog.GroupValue(attrs...)
}

// LogValue logs the request without the token of its callback grant.
func (r Request) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("type", string(r.Type))}
	if r.Configuration != nil {
		attrs = append(attrs, slog.Any("configuration", r.Configuration))
	}
	if r.Implementation != nil {
		attrs = append(attrs, slog.Any("implementation", r.Implementation))
	}
	if r.Input != nil {
		attrs = append(attrs, slog.Any("input", r.Input))
	}
	if r.DeadlineMs != nil {
		attrs = append(attrs, slog.Int64("deadline_ms", *r.DeadlineMs))
	}
	if r.Callback != nil {
		attrs = append(attrs, slog.Any("callback", r.Callback))
	}
	if r.Name != "" {
		attrs = append(attrs, slog.String("name", r.Name))
	}
	if r.TargetSequence != 0 {
		attrs = append(attrs, slog.Uint64("target_sequence", r.TargetSequence))
	}
	return slog.GroupValue(attrs...)
}
