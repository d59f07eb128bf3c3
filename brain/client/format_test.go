package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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

// TestErrorsHideCredentials: an error never prints a credential it came
// across: not the host token of a registration answer that is malformed
// (an answer of another version of the API, a proxy's), not the password
// of a base URL that is refused.
func TestErrorsHideCredentials(t *testing.T) {
	const hostSecret = "s3cret-host-token"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"host_aaaaaaaaaaaaaaaaaaaa","token":"`+hostSecret+`"}`)
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Host(context.Background())
	if err == nil {
		t.Fatal("a registration without host_id started a host")
	}
	if strings.Contains(err.Error(), hostSecret) {
		t.Errorf("malformed registration: the error prints the host token: %v", err)
	}

	const password = "s3cret-password"
	_, err = New("htps://user:"+password+"@brain.internal:8080", nil)
	if err == nil {
		t.Fatal("a base URL with another scheme was taken")
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("refused base URL: the error prints its password: %v", err)
	}
}

// TestUnparsableBaseURLHidesItsPassword: a base URL that does not parse
// (a password with a stray "%") is refused by New without printing the
// password, rather than taken and then printed, as the HTTP request's
// parse error quotes it, in the error of every call.
func TestUnparsableBaseURLHidesItsPassword(t *testing.T) {
	const password = "s3cret%zzpassword"
	c, err := New("http://user:"+password+"@127.0.0.1:9", &Options{Retries: -1})
	if err == nil {
		defer c.Close()
		_, err = c.Sessions.List(context.Background())
	}
	if err == nil {
		t.Fatal("a call through an unparsable base URL succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("unparsable base URL: the error prints its password: %v", err)
	}
}

// TestBaseURLWithoutHostOrWithQueryRefused: every call's path is appended
// to the base URL, so a base URL with a query or a fragment would send
// each call to the wrong path (".../?x=1/v1/sessions"), and one without a
// host could call nothing; New refuses both, saying why, and quotes a
// password the URL holds only redacted.
func TestBaseURLWithoutHostOrWithQueryRefused(t *testing.T) {
	for _, c := range []struct{ url, say string }{
		{"http://", "names no host"},
		{"http:///v1", "names no host"},
		{"http://127.0.0.1:8080/?x=1", "has a query or a fragment"},
		{"http://127.0.0.1:8080/?", "has a query or a fragment"},
		{"http://127.0.0.1:8080/#top", "has a query or a fragment"},
		{"http://127.0.0.1:8080/#", "has a query or a fragment"},
		{"https://user:s3cret@brain.internal/?x=1", "has a query or a fragment"},
	} {
		c0, err := New(c.url, nil)
		if err == nil {
			c0.Close()
			t.Errorf("%q: taken", c.url)
			continue
		}
		if !strings.Contains(err.Error(), c.say) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: %v; want it to say %q without the password", c.url, err, c.say)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:8080", "http://127.0.0.1:8080/", "https://brain.internal/prefix/"} {
		c0, err := New(ok, nil)
		if err != nil {
			t.Errorf("%q: %v", ok, err)
			continue
		}
		c0.Close()
	}
}
