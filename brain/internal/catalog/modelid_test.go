package catalog

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestModelIDsWithUnicodeSpaceAreRefused: a model id is free of white
// space and control characters in any script, not only ASCII: an id with
// a no-break space reads as two words in GET /v1/models, and one with a
// C1 control or a line separator breaks the lines of a terminal.
func TestModelIDsWithUnicodeSpaceAreRefused(t *testing.T) {
	for _, id := range []string{"gpt\u00a05", "gpt\u20035", "gpt\u30005", "gpt\u20285", "gpt\u00855", "gpt\u009b5", "gpt\u180e5x\u2029"} {
		body := `{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h/v1","models":[{"id":` + strconv.Quote(id) + `}]}]}`
		if _, err := Decode([]byte(body)); !errors.Is(err, ErrInvalid) {
			t.Errorf("model id %q: %v, want ErrInvalid", id, err)
		}
	}
	for _, id := range []string{"gpt-5", "claude-sonnet-4-5@20250929", "qwen/qwen3:8b", "modèle-été", "模型"} {
		body := `{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h/v1","models":[{"id":` + strconv.Quote(id) + `}]}]}`
		if _, err := Decode([]byte(body)); err != nil {
			t.Errorf("model id %q refused: %v", id, err)
		}
	}
}

// TestModelIDsWithFormatCharactersAreRefused: an id holding a zero-width
// character, a byte order mark or a bidirectional override reads in GET
// /v1/models as another id ("gpt-5" twice, or "gpt-5" reversed), so the
// file is refused, and the error shows the character escaped rather
// than letting it reorder the operator's terminal.
func TestModelIDsWithFormatCharactersAreRefused(t *testing.T) {
	for _, id := range []string{"gpt-5\u200b", "\ufeffgpt-5", "gpt\u200d-5", "gpt-\u202e5-tpg", "gpt-\u20665\u2069", "gpt\u00ad5", "gpt\U000e0041"} {
		jid, _ := json.Marshal(id)
		body := `{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h/v1","models":[{"id":"gpt-5"},{"id":` + string(jid) + `}]}]}`
		_, err := Decode([]byte(body))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("model id %+q: %v, want ErrInvalid", id, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, strconv.QuoteToASCII(id)) {
			t.Errorf("model id %+q: error %q does not show it escaped", id, msg)
		}
	}
}
