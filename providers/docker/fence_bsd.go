//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package docker

// lockRange locks the whole file at path, whatever off says, where open
// file description locks of a byte range are not to be had: the locks of
// the state directory's files keep a second provider from serving it and
// a gc command from removing what a provider uses, but one binding in use
// holds off a gc of every binding (it skips them, and a later gc removes
// them), and a gc removing one binding's resources holds back, as briefly,
// the operations of every binding.
func lockRange(path string, _ int64, exclusive bool) (func(), error) {
	return flockFile(path, exclusive)
}
