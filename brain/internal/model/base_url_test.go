package model

import (
	"strings"
	"testing"
)

// TestBaseURLRefusalHidesCredentials: a base URL refused for the
// credentials it carries (a token as its user name, a password, a key in
// its query) or that is not a URL at all is refused without the error
// showing them, for the hosted providers' base URLs and for an
// endpoint's, and still names the field and what is wanted.
func TestBaseURLRefusalHidesCredentials(t *testing.T) {
	const secret = "tok_S3CRET"
	for _, raw := range []string{
		"https://" + secret + "@gateway.test/v1",
		"https://user:" + secret + "@gateway.test/v1",
		"https://gateway.test/v1?api_key=" + secret,
		"https://gateway.test/v1#" + secret,
		"https://user:" + secret + "%zz@gateway.test/v1",
		"https://user:" + secret + "#x@gateway.test/v1",
	} {
		for field, cfg := range map[string]Config{
			"OpenAIBaseURL":         {OpenAIBaseURL: raw},
			"AnthropicBaseURL":      {AnthropicBaseURL: raw},
			"Endpoints[gw].BaseURL": {Endpoints: []Endpoint{{Name: "gw", Dialect: DialectOpenAIChat, BaseURL: raw}}},
		} {
			_, err := New(cfg)
			if err == nil {
				t.Fatalf("New with %s %q succeeded", field, raw)
			}
			if strings.Contains(err.Error(), secret[4:]) {
				t.Errorf("New with %s %q: the error shows the credential: %v", field, raw, err)
			}
			if !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "want an http or https URL") {
				t.Errorf("New with %s %q: error %q does not name the field and what is wanted", field, raw, err)
			}
		}
	}
}
