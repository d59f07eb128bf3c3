package client

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// String names the client by its server; its token is never printed.
func (c *Client) String() string {
	if c == nil {
		return "client.Client(nil)"
	}
	base := c.base
	if u, err := url.Parse(base); err == nil {
		base = u.Redacted() // a password in the URL is not printed either
	}
	return fmt.Sprintf("client.Client(%s)", base)
}

// GoString is String: %#v prints no token either.
func (c *Client) GoString() string { return c.String() }

// String names the host by its id; its token is never printed.
func (h *Host) String() string {
	if h == nil {
		return "client.Host(nil)"
	}
	return fmt.Sprintf("client.Host(%s)", h.ID)
}

// GoString is String: %#v prints no token either.
func (h *Host) GoString() string { return h.String() }

// printableURL quotes s for an error message without the password of its
// userinfo; a string that does not parse as a URL and holds an "@" is not
// shown at all.
func printableURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err == nil && u.User != nil:
		return strconv.Quote(u.Redacted())
	case strings.Contains(s, "@"):
		return "(not shown: it may hold a password)"
	}
	return strconv.Quote(s)
}
