package catalog

import (
	"errors"
	"strconv"
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
