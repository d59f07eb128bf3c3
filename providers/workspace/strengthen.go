package workspace

// strengthen gives the workspace of a binding whose state, written by an
// earlier release, identifies it by neither mark nor handle, a mark (and
// records its handle), once it is found to be the directory allocated:
// from then on a directory re-created at its path is told from it even
// where it gets the inode number back and no creation time is recorded,
// and a remount that numbers its inode anew loses it no more. A workspace
// not found as allocated is left as it is, for its first use to report
// lost. New calls it before any operation runs.
func (b *binding) strengthen() {
	if b.rec.Phase != phaseReady || b.rec.Mark != "" || b.rec.Handle != "" {
		return
	}
	path := b.dirPath()
	want := b.rec.identity()
	if got, markRead, err := identify(path); err != nil || !want.matches(got, markRead) {
		return
	}
	mark := newDirName()
	if err := writeMark(path, mark); err != nil {
		mark = ""
	}
	id, markRead, err := identify(path)
	if err != nil {
		return
	}
	if !markRead || id.mark != mark {
		id.mark = ""
	}
	if id.mark == "" && id.handle == "" {
		return // the file system keeps neither
	}
	if id.birth == 0 {
		id.birth = want.birth
	}
	next := b.rec
	next.setIdentity(id)
	if err := b.p.store.save(&next); err != nil {
		b.p.opts.Logger.Warn("record the mark of a workspace", "binding", b.key, "error", err)
		return
	}
	b.rec = next
	if sp, err, done := b.lazy.Peek(); done && err == nil && sp != nil {
		sp.id = id
	}
}
