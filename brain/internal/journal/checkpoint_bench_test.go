package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkCheckpointWrite writes checkpoints of 64 sessions in turn, as
// an engine releasing sessions does, each a 20 KiB payload over the last:
// "store" through WriteCheckpoint (written in place); "raw-overwrite" the
// same bytes with a bare open, write at offset 0 and close of the file,
// the floor; "raw-rename" the same bytes through a temporary file renamed
// over the old one, as checkpoints were written before.
//
//	go test ./brain/internal/journal -run '^$' -bench CheckpointWrite -benchtime 3000x
func BenchmarkCheckpointWrite(b *testing.B) {
	const sessions = 64
	payload := []byte(`{"transcript":"` + strings.Repeat("t", 20<<10) + `"}`)
	b.Run("store", func(b *testing.B) {
		fs, err := OpenFileStore(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer fs.Close()
		ids := make([]string, sessions)
		for i := range ids {
			ids[i] = fmt.Sprint("s", i)
			if err := fs.Append(bg, ids[i], 1, numbered(1, 3)); err != nil {
				b.Fatal(err)
			}
		}
		i := 0
		for b.Loop() {
			if err := fs.WriteCheckpoint(bg, ids[i%sessions], 3, payload); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	files := func(b *testing.B) []string {
		dir := b.TempDir()
		paths := make([]string, sessions)
		for i := range paths {
			d := filepath.Join(dir, fmt.Sprint("s", i))
			if err := os.Mkdir(d, 0o700); err != nil {
				b.Fatal(err)
			}
			paths[i] = filepath.Join(d, checkpointName)
			if err := os.WriteFile(paths[i], payload, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		return paths
	}
	b.Run("raw-overwrite", func(b *testing.B) {
		paths := files(b)
		i := 0
		for b.Loop() {
			f, err := os.OpenFile(paths[i%sessions], os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.WriteAt(payload, 0); err != nil {
				b.Fatal(err)
			}
			f.Close()
			i++
		}
	})
	b.Run("raw-rename", func(b *testing.B) {
		paths := files(b)
		i := 0
		for b.Loop() {
			p := paths[i%sessions]
			f, err := os.OpenFile(p+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(payload); err != nil {
				b.Fatal(err)
			}
			f.Close()
			if err := os.Rename(p+".tmp", p); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
