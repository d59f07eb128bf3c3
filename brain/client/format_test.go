package client

import (
	"fmt"
	"strings"
	"testing"
)

// A client or a host printed with any verb (a log line, an error wrapping
// one) shows its server or id, never its token.
func TestPrintedClientAndHostHideTokens(t *testing.T) {
	const secret = "s3cret-operator-token"
	const hostSecret = "s3cret-host-token"
	c, err := New("http://127.0.0.1:9", &Options{Token: secret})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := &Host{c: c, ID: "host_1", token: hostSecret}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{c, h} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, secret) || strings.Contains(out, hostSecret) {
				t.Errorf("%s of %T printed a token: %s", verb, v, out)
			}
		}
	}
	if got := fmt.Sprint(h); got != "client.Host(host_1)" {
		t.Errorf("host prints as %q", got)
	}
	if got := fmt.Sprint(c); got != "client.Client(http://127.0.0.1:9)" {
		t.Errorf("client prints as %q", got)
	}
}
