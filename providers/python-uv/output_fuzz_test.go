package pythonuv

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// FuzzOutputProblem: whatever a module writes to stdout, outputProblem
// (on stdout without the JSON white space around it, as Execute reads it)
// finds a problem exactly when the result that carries the whole stdout,
// as the provider encodes it, is refused by Brain's decoder: the provider
// never answers a result that Brain would refuse as malformed, nor
// refuses one that Brain would take.
func FuzzOutputProblem(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, `"caf` + "\xe9" + `"`, `{"1": "x", "1": "y"}`, `{"v": NaN}`, `{"a": 1} {"b": 2}`,
		`[1, 2, {"x": [true, null]}]`, `""`, `1e999`, `{"a":{"b":1,"b":2}}`, `"\ud800"`, `{"A":1,"a":2}`, `null`, ``,
		" \t\r\n{\"a\": 1}\r\n", "{\"a\": 1}\f", "{\"a\": 1}\v", "{\"a\": 1}\u00a0", "{\"a\": 1}\u0085", "\f1", " \n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		problem := outputProblem(trimJSONSpace(out))
		if len(out) == 0 {
			// Result(nil) would answer null: an empty stdout is refused.
			if problem == "" {
				t.Fatal("an empty stdout has no problem")
			}
			return
		}
		doc, err := json.Marshal(envapi.NewResponse(1, envapi.Result(json.RawMessage(out))))
		if err != nil {
			if problem == "" {
				t.Fatalf("no problem found in %q, whose result does not encode: %v", out, err)
			}
			return
		}
		_, derr := envapi.DecodeResponse(doc)
		if (problem == "") != (derr == nil) {
			t.Fatalf("stdout %q: problem %q, Brain's decoder %v", out, problem, derr)
		}
	})
}
