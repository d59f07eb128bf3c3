package loophost

import (
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// damagedCacheError reports whether err, from compiling a module, says
// that an entry of the compilation cache could not be decoded (bits
// flipped or the file cut short on disk): the module is not at fault, and
// compiling it anew once the entry is gone judges it.
func damagedCacheError(err error) bool {
	return err != nil && strings.Contains(err.Error(), "compilationcache:")
}

// discardCache removes every entry of the compilation cache under
// Options.CacheDir. wazero names no entry in its errors, so a damaged one
// is discarded with the rest; what is compiled in memory is kept, and the
// others are written again as modules are next compiled.
func (h *Host) discardCache() error { return sweepCache(h.opts.CacheDir, true) }

// sweepCache removes the entries of the compilation cache under dir that
// are not regular files (all of them when all is set): those of the
// runtime's own directory, wazero-<version>-<arch>-<os>, named by the 64
// hex digits of their key. The runtime opens an entry by its name and
// reads it, so a named pipe there would hold a compilation, and every
// admission waiting for it, for ever, and a directory would make its
// entry impossible to write. Nothing else in dir is touched.
func sweepCache(dir string, all bool) error {
	dirs, err := filepath.Glob(filepath.Join(dir, "wazero-*-"+runtime.GOARCH+"-"+runtime.GOOS))
	if err != nil {
		return err
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !cacheKey(e.Name()) || !all && e.Type().IsRegular() {
				continue
			}
			// RemoveAll follows no symbolic link.
			if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// cacheKey reports whether name is that of a compilation cache entry.
func cacheKey(name string) bool {
	b, err := hex.DecodeString(name)
	return err == nil && len(b) == 32
}
