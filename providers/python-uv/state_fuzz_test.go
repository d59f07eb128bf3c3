package pythonuv

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeBindingFile: any bytes in a state file decode to the binding
// key the file is named after or to errNotBindingFile, never a panic; a
// key decoded is written back by attach as a file that openState reads as
// that same binding.
func FuzzDecodeBindingFile(f *testing.F) {
	good, _ := json.Marshal(bindingFile{Version: bindingFileVersion, Key: "ses_1/env/3"})
	f.Add(bindingFileName("ses_1/env/3"), good)
	f.Add(bindingFileName("k"), []byte(`{"version":1,"key":"k"}`))
	f.Add(bindingFileName("k"), []byte(`{"version":2,"key":"k"}`))
	f.Add(bindingFileName("k"), []byte(`{"version":1,"key":"k","key":"other"}`))
	f.Add(bindingFileName("k"), []byte(`{"VERSION":1,"Key":"k"}`))
	f.Add(bindingFileName("k"), []byte(`{"version":1,"key":""}`))
	f.Add("other.json", []byte(`{"version":1,"key":"k"}`))
	f.Add(bindingFileName("k"), []byte(`null`))
	f.Add(bindingFileName("k"), []byte(`{"version":1e400,"key":"k"}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		key, err := decodeBindingFile(name, data)
		if err != nil {
			if !errors.Is(err, errNotBindingFile) || key != "" {
				t.Fatalf("refusal %q, %v: want errNotBindingFile alone", key, err)
			}
			return
		}
		if key == "" || bindingFileName(key) != name {
			t.Fatalf("decoded key %q from a file named %q", key, name)
		}
		dir := t.TempDir()
		s, _, err := openState(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.attach(key); err != nil {
			t.Fatal(err)
		}
		data2, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("attach wrote no file %s: %v", name, err)
		}
		if again, err := decodeBindingFile(name, data2); err != nil || again != key {
			t.Fatalf("round trip: %q %v, want %q", again, err, key)
		}
		if _, bindings, err := openState(dir); err != nil || len(bindings) != 1 {
			t.Fatalf("reopened state: %v %v, want the binding %q", bindings, err, key)
		}
	})
}
