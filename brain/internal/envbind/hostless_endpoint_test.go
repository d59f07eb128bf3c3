package envbind

import (
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// An endpoint that names no host (only a port) is no provider's address:
// the dialer would connect to Brain's own machine instead. It is refused
// when configured, as the default route or a route, with the endpoint
// error, and a session URL naming no host is refused at create.
func TestEndpointWithoutHostRefused(t *testing.T) {
	for _, raw := range []string{"https://:443", "https://:443/v1", "http://:8080", "https://[]:443", "https://"} {
		c := Config{PublicURL: "http://127.0.0.1:1", Key: make([]byte, keySize), BaseURL: raw}
		var se *SettingError
		if err := c.Check(); !errors.As(err, &se) || se.Field != "BaseURL" || !errors.Is(err, errEndpoint) {
			t.Errorf("BaseURL %q: %v", raw, err)
		}
		c = Config{PublicURL: "http://127.0.0.1:1", Key: make([]byte, keySize), Routes: map[string]Route{"w": {Endpoint: raw}}}
		if err := c.Check(); !errors.As(err, &se) || se.Field != "Routes" || !errors.Is(err, errEndpoint) {
			t.Errorf("route endpoint %q: %v", raw, err)
		}
		b := testBinder(t, Config{})
		if err := b.ValidateEnvironment(api.Environment{Name: "box", Driver: api.DriverHTTP, URL: raw}); err == nil {
			t.Errorf("session url %q accepted", raw)
		}
	}
}
