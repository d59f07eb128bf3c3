// Package brain embeds the Brain session server: New opens (and locks) a
// data directory, recovers its journal, idempotency log and sealed
// credentials, and answers a Server whose Handler serves the session HTTP
// API; Close drains it. The brain command's "serve" is a thin wrapper around
// this package; tests and programs that host Brain in-process use it
// directly.
//
//	srv, err := brain.New(brain.Config{DataDir: "brain-data", Token: token})
//	if err != nil { ... }
//	defer srv.Close(context.Background())
//	http.ListenAndServe("127.0.0.1:8080", srv.Handler())
package brain
