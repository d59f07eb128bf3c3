// Package backend is the storage seam of a Brain: what brain.New needs
// from the place its state lives. A Backend supplies the journal store,
// the idempotency store (opened once the session engine can derive
// answers from the journal), the sealed-credential store and the reporter
// key. The file backend over a data directory is built in; another
// backend is one package that calls Register from an init function with
// the scheme of its database URL (such as "postgres"), so that
// brain.Config.Storage.DatabaseURL selects it.
package backend
