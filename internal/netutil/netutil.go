// Package netutil holds the network checks Brain's server and the
// environment SDK share.
package netutil

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
)

// LoopbackHost reports whether host, the Host header of a request (a name
// or an address, with or without a port), names the loopback interface:
// localhost, a name under .localhost, or a loopback address. A server
// without authentication answers only such requests: a web page that a
// browser loaded from a name an attacker's DNS then points at the loopback
// address (DNS rebinding) names that host, not a loopback one.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// DialablePort reports whether port, the port of a URL (url.URL.Port),
// is one a connection can be made to: from 1 to 65535, or empty, which
// selects the scheme's.
func DialablePort(port string) bool {
	if port == "" {
		return true
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// BaseURLText reports whether raw can be the base of request URLs as
// written: it holds no white space or control character, which would
// become part of every request's path, and no '?' or '#', which would
// swallow the path appended to it.
func BaseURLText(raw string) bool {
	return !strings.ContainsAny(raw, "?#") &&
		!strings.ContainsFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
}

// HostName reports whether host, the host of a URL as url.URL.Hostname
// answers it, names a host: it is not empty, as in http://:8000/v1, which
// would be dialled on the local machine under no name at all, and it
// holds no white space, control character or Unicode format character
// (a zero width space, a soft hyphen, a direction mark), which no host
// name holds and which a reader of the setting does not see.
func HostName(host string) bool {
	return host != "" && !strings.ContainsFunc(host, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	})
}
