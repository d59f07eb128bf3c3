package envbind

import (
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// A session URL naming a port no connection can be made to (0, or past
// 65535) is refused at create, as a configured endpoint is, instead of
// being accepted and failing every operation as unreachable. Ports 1 to
// 65535, and none, are accepted.
func TestSessionURLPortChecked(t *testing.T) {
	b := testBinder(t, Config{})
	for _, raw := range []string{"http://127.0.0.1:0", "https://env.example:65536", "https://env.example:99999/v1", "http://[::1]:0"} {
		err := b.ValidateEnvironment(api.Environment{Name: "box", Driver: api.DriverHTTP, URL: raw})
		if err == nil || !strings.Contains(err.Error(), "port") {
			t.Errorf("session url %q: %v, want an error naming the port", raw, err)
		}
	}
	for _, raw := range []string{"http://127.0.0.1:1", "https://env.example:65535", "https://env.example", "http://[::1]:8080/v1"} {
		if err := b.ValidateEnvironment(api.Environment{Name: "box", Driver: api.DriverHTTP, URL: raw}); err != nil {
			t.Errorf("session url %q refused: %v", raw, err)
		}
	}
}
