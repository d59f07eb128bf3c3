//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package docker

// lockRange takes no lock where neither open file description locks nor
// flock are to be had: a gc command there is told nothing of the
// executes of a provider serving the same state directory, nor a second
// provider that the directory is served.
func lockRange(string, int64, bool) (func(), error) { return func() {}, nil }
