package loophost

import (
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestAnswerMembersAreExact: a turn or run answer naming a member twice,
// or in another case, is refused as an unknown member is, not read as
// encoding/json would (the last of two, or regardless of case).
func TestAnswerMembersAreExact(t *testing.T) {
	for _, doc := range []string{`{"RESULT":1}`, `{"result":1,"result":2}`, `{"error":{"Message":"m"}}`} {
		if _, err := decodeTurnAnswer("loop", []byte(doc), nil); err == nil {
			t.Errorf("turn answer %s was accepted", doc)
		}
	}
	for _, doc := range []string{`{"Outcome":{"status":"ok","value":1}}`, `{"outcome":{"status":"ok","value":1},"outcome":{"status":"ok","value":2}}`} {
		if r := decodeRunAnswer("tool", []byte(doc), nil, nil); r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeInvalidOutput {
			t.Errorf("run answer %s = %+v, want invalid_output", doc, r)
		}
	}
	if out, err := decodeTurnAnswer("loop", []byte(`{"result":{"Any":1,"any":2}}`), nil); err != nil || string(out.Result) != `{"Any":1,"any":2}` {
		t.Errorf("a result's own members = %s, %v; want them as written", out.Result, err)
	}
}
