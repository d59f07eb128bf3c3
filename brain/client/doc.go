// Package client is a Go client for Brain's session HTTP API.
//
//	c, err := client.New("http://127.0.0.1:8080", &client.Options{Token: token})
//	if err != nil { ... }
//	defer c.Close()
//	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
//		Model: api.ModelConfig{Provider: "scripted", Name: "demo"},
//	})
//	sum, err := s.Send(ctx, api.UserInput{Message: "hello"})
//	for ev, err := range s.Events(ctx, 0, client.Follow()) { ... }
//
// Every mutation carries an Idempotency-Key: IdempotencyKey sets it, and
// otherwise the client makes a random one per call. A call that fails
// before any answer arrives (a lost connection) is retried with the same
// key, so it runs at most once. Submit and Send are separate operations on
// the server: retry an uncertain Submit with Submit and the same key.
//
// Errors the server answers are *api.ApiError values (use errors.As);
// ErrClosed reports use after Close. Close releases the client's
// connections only: it does not interrupt, end or delete sessions.
//
// Events iterates over committed events after a cursor, page by page until
// none are left; with Follow it streams them (server-sent events), and
// reconnects from the last sequence it yielded whenever the stream breaks
// or the subscriber lagged, until the session ends or ctx ends.
package client
