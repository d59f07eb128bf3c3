package envapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// documentKinds are the documents FuzzDecodeDocuments decodes, by the
// prefix of their examples under testdata/valid.
var documentKinds = []string{"Outcome", "ReporterEvent", "ControlRequest", "ExecutionCall"}

// FuzzDecodeDocuments feeds any bytes to the decoders of the outcomes,
// reporter events, control requests and execution calls that cross the
// wire: each answers a value or a bounded error, never a panic, and a
// value it accepts encodes to a document it accepts again, encoding the
// same bytes.
func FuzzDecodeDocuments(f *testing.F) {
	for i, kind := range documentKinds {
		files, _ := filepath.Glob("testdata/valid/" + kind + ".*.json")
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(uint8(i), data)
			}
		}
	}
	f.Add(uint8(0), []byte(`{"status":"error","error":{"code":"`+strings.Repeat("c", 300)+`","message":"m"}}`))
	f.Add(uint8(0), []byte(`{"status":"ok","value":1,"value":2}`))
	f.Add(uint8(1), []byte(`{"type":"event","event_type":"progress","data":{"a":1},"Data":2}`))
	f.Add(uint8(2), []byte(`{"operation":"list","note":"`+"\xff"+`"}`))
	f.Add(uint8(3), []byte(`{"method":"emit","input":{"event_type":"x","data":null}}`))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		kind := documentKinds[int(which)%len(documentKinds)]
		v, err := decodeByName(kind, data)
		if err != nil {
			boundedError(t, err)
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encode accepted %s %s: %v", kind, data, err)
		}
		again, err := decodeByName(kind, out)
		if err != nil {
			t.Fatalf("%s %s encodes to %s, refused: %v", kind, data, out, err)
		}
		out2, err := json.Marshal(again)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("%s not stable:\n%s\n%s (%v)", kind, out, out2, err)
		}
	})
}
