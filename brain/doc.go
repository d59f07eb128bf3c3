// Package brain embeds the Brain session server. Config is plain data;
// New validates it, opens the storage backend it selects (the data
// directory by default: journal, idempotency log, sealed credentials),
// builds the model clients, the environment bindings, the host registry
// (host environments, whose registrations live in the data directory's
// resident-hosts/) and the Wasm agentloop host, and answers a Server whose Handler serves every route of
// the session API. Serve serves it on a listener; Close drains it. The
// brain command's "serve" maps its flags and BRAIN_* variables to a Config
// and runs this package; tests and programs that host Brain in-process
// use it directly.
//
//	srv, err := brain.New(ctx, brain.Config{DataDir: "brain-data", Token: token})
//	if err != nil { ... }
//	ln, err := net.Listen("tcp", "127.0.0.1:8080")
//	if err != nil { ... }
//	err = srv.Serve(ctx, ln) // until ctx ends, then drains
//
// A Config that fails validation answers a *ConfigError whose problems
// name each field and the BRAIN_* variable "brain serve" reads it from.
package brain
