package catalog

import (
	"errors"
	"strings"
	"testing"
)

// TestDecodeSaysWhatIsWrong: a providers file that is not a valid one is
// refused with an error an operator can act on: where a syntax error is,
// which member has the wrong type and what it should be, that the file is
// empty, starts with a byte order mark or is not UTF-8; never "EOF" alone
// or the names of Go types.
func TestDecodeSaysWhatIsWrong(t *testing.T) {
	p := `{"name":"p","dialect":"openai_responses","base_url":"https://h","models":[{"id":"a"}]}`
	for body, want := range map[string][]string{
		"":       {"empty"},
		"  \n\t": {"empty"},
		"{\"providers\":[\n{\"name\":\"p\",\n\"dialect\":\"openai_responses\" \"base_url\":\"https://h\"}]}": {"line 3, column 30"},
		"{\"providers\":[" + p + "]":     {"line 1", "ends"},
		"\xEF\xBB\xBF{\"providers\":[]}": {"byte order mark"},
		`{"providers":[{"name":1}]}`:     {"providers[0].name", "want a string", "a number"},
		`{"providers":[` + p + `,{"name":"q","dialect":"openai_responses","base_url":"https://h","models":{}}]}`: {"providers[1].models", "want an array", "an object"},
		`{"providers":[{"name":"p","models":[{"id":"a","context_window_tokens":1.5}]}]}`:                         {"providers[0].models[0].context_window_tokens", "want an integer"},
		`{"providers":{}}`: {"providers", "want an array"},
		`{"providers":[` + p + `,{"name":"q","models":[],"api_key":"sk-1"}]}`:      {`unknown member "api_key" in providers[1]`},
		`{"providers":[{"name":"q","models":[{"id":"a"},{"id":"b","window":1}]}]}`: {`unknown member "window" in providers[0].models[1]`},
		`{"provider":[]}`: {`unknown member "provider"`},
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h","models":[{"id":"a` + "\xff" + `"}]}]}`: {"line 1, column 97", "UTF-8"},
	} {
		_, err := Decode([]byte(body))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%q) = %v, want ErrInvalid", body, err)
			continue
		}
		msg := err.Error()
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("Decode(%q) = %q, want it to say %q", body, msg, w)
			}
		}
		for _, no := range []string{"Go struct", "FileProvider", "int64", "EOF", "sk-1"} {
			if strings.Contains(msg, no) {
				t.Errorf("Decode(%q) = %q, which says %q", body, msg, no)
			}
		}
	}
}

// TestDecodeRefusesMisnamedMembers: a member whose name matches a field
// only without regard to case ("Models", "BASE_URL") is refused as
// unknown, as documented, rather than taken for the field, where of
// "models" and "Models" in one provider one list would be lost without a
// word.
func TestDecodeRefusesMisnamedMembers(t *testing.T) {
	for _, body := range []string{
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h","Models":[{"id":"a"}]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h","models":[{"id":"a"}],"Models":[]}]}`,
		`{"Providers":[]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","BASE_URL":"https://h","models":[]}]}`,
	} {
		f, err := Decode([]byte(body))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%s) = %+v, %v; want ErrInvalid", body, f, err)
		}
	}
}
