package brain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// errDataDirMode refuses a data directory that group or others may
// write.
var errDataDirMode = errors.New("group and others must not be able to write the data directory")

// checkDataDirMode refuses the data directory at dir when it exists and
// group or others may write it: whoever may rename its entries can put a
// token file of their own in place of operator.token, or journals of
// their own in place of sessions/. As PostgreSQL does with its data
// directory, Brain does not start until the operator fixes it. A
// directory not there yet is created with mode 0700.
func checkDataDirMode(dir string) error {
	if dir == "" || runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("brain: Config.DataDir (BRAIN_DATA_DIR): %w", err)
	}
	if m := fi.Mode(); fi.IsDir() && m.Perm()&0o022 != 0 {
		return fmt.Errorf("brain: Config.DataDir (BRAIN_DATA_DIR): %s has mode %v: %w (chmod 700 %s)", dir, m, errDataDirMode, dir)
	}
	return nil
}
