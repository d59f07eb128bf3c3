package cli

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// ListenAddr checks the value of flag, an address to listen on: host:port
// with a port a listener can take (a number up to 65535, or a service
// name such as "http"). A port beyond that is a command line mistake, not
// a failure to serve.
func ListenAddr(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return UsageError{Err: fmt.Errorf("%s %q: want host:port, such as 127.0.0.1:8090: %w", flag, addr, err)}
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return UsageError{Err: fmt.Errorf("%s %q: want a port from 0 to 65535: %w", flag, addr, err)}
	}
	return nil
}

// BaseURL checks the value of flag, a server's base URL: an absolute
// http:// or https:// URL naming a host, such as http://127.0.0.1:8080,
// without a query or a fragment. The URL is quoted without a password it
// may hold.
func BaseURL(flag, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return UsageError{Err: fmt.Errorf("%s%s: want an absolute http:// or https:// URL, such as http://127.0.0.1:8080", flag, shown(u, raw))}
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return UsageError{Err: fmt.Errorf("%s%s: want a base URL, without a query or a fragment", flag, shown(u, raw))}
	}
	return nil
}

// shown quotes a URL for an error, without its password: redacted when
// it parsed, as given when it holds no user information, else not at all.
func shown(u *url.URL, raw string) string {
	switch {
	case u != nil:
		return fmt.Sprintf(" %q", u.Redacted())
	case !strings.Contains(raw, "@"):
		return fmt.Sprintf(" %q", raw)
	}
	return ""
}
