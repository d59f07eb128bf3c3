package envbind

import (
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// A session URL whose host holds an invisible Unicode format character (a
// zero width space, a soft hyphen, a direction mark) or white space, or
// that names no host at all, is refused at create naming the url field,
// as a configured endpoint is, instead of being accepted and failing
// every operation. The error never quotes the URL.
func TestSessionURLHostChecked(t *testing.T) {
	b := testBinder(t, Config{})
	for _, raw := range []string{
		"https://env\u200b.example/v1?sekrit",
		"https://env\u00ad.example/sekrit",
		"http://\u200eenv.example:8080/sekrit",
		"http://env%20.example/sekrit",
		"http://:8080/sekrit",
		"https://[]/sekrit",
	} {
		err := b.ValidateEnvironment(api.Environment{Name: "box", Driver: api.DriverHTTP, URL: raw})
		if err == nil || !strings.HasPrefix(err.Error(), "url ") || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("session url %q: %v, want an error naming the url field without quoting it", raw, err)
		}
	}
	for _, raw := range []string{"https://env.example/v1", "http://127.0.0.1:8080", "https://bücher.example"} {
		if err := b.ValidateEnvironment(api.Environment{Name: "box", Driver: api.DriverHTTP, URL: raw}); err != nil {
			t.Errorf("session url %q refused: %v", raw, err)
		}
	}
}
