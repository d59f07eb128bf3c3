package envbind

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/fsutil"
	"github.com/brain-in-go/brain/internal/netutil"
)

// Defaults of Config.
const (
	DefaultMaxResponseBytes = envapi.MaxResponseBytes
	DefaultResponseTimeout  = 120 * time.Second
	DefaultConnectTimeout   = 5 * time.Second
	DefaultMaxRequestBytes  = envapi.MaxCallBytes
	// KeyFileName is the reporter key's file name under server-metadata/.
	KeyFileName = "reporter.key"
)

// Route is where operations of a driver name go.
type Route struct {
	// Endpoint is the provider's base URL; operations go to
	// {Endpoint}/v1/operations. HTTPS, or HTTP on a loopback host.
	Endpoint string `json:"endpoint"`
	// APIKey is the operator's credential for the provider (optional).
	APIKey string `json:"api_key,omitempty"`
}

// Config configures a Binder. "brain serve" fills it from the environment and
// its flags; every field has a default.
type Config struct {
	// PublicURL is the base of callback and reporter URLs handed to
	// providers (BRAIN_PUBLIC_URL, default http://<listen address>).
	// When empty, SetPublicURL must give it before operations carrying
	// grants are delivered.
	PublicURL string
	// BaseURL and APIKey are the default route for drivers without a
	// route (BRAIN_ENVIRONMENT_BASE_URL, BRAIN_ENVIRONMENT_API_KEY).
	BaseURL string
	APIKey  string
	// RoutesFile is a JSON object {"<driver>": {"endpoint", "api_key"?}}
	// (BRAIN_ENVIRONMENT_ROUTES_FILE); its routes join Routes.
	RoutesFile string
	// Routes maps driver names to routes.
	Routes map[string]Route
	// Key is the 32-byte server key reporter tokens are derived from.
	// When empty, KeyFile is read, or created with 32 random bytes and
	// mode 0600 (usually <data dir>/server-metadata/reporter.key).
	Key     []byte
	KeyFile string
	// Epoch, if set (a cluster), answers the lease epoch this node holds
	// on a session: invocation tokens are minted under it and refused
	// once it changed (after a failover). nil mints them under epoch 0.
	Epoch func(session string) (int64, bool)
	// MaxResponseBytes bounds a provider's answer
	// (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES, 0: 32 MiB).
	MaxResponseBytes int64
	// ResponseTimeout bounds one operation's round trip
	// (BRAIN_MAX_ENVIRONMENT_SECS, 0: 120 s), except a remote
	// agentloop's execute: that is its turn, bounded by the turn's
	// deadline.
	ResponseTimeout time.Duration
	// ConnectTimeout bounds connecting to a provider
	// (BRAIN_MAX_ENVIRONMENT_CONNECT_SECS, 0: 5 s).
	ConnectTimeout time.Duration
	// MaxRequestBytes bounds bodies of the routes this package serves
	// (BRAIN_MAX_REQUEST_BYTES, 0: 32 MiB).
	MaxRequestBytes int64
	// Logger receives warnings (nil: slog.Default()). Nothing logged
	// carries a token, a credential or a request body.
	Logger *slog.Logger
	// Tracer, when set, starts a client span for every operation sent and
	// sends its W3C trace context (traceparent, tracestate) with it; nil
	// sends no trace context at all.
	Tracer trace.Tracer
}

// Check answers the error New would answer for c's public URL, routes
// file and endpoints, without building anything, so that a caller can
// refuse them before it opens anything else.
func (c *Config) Check() error {
	_, err := c.withDefaults()
	return err
}

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.MaxResponseBytes <= 0 {
		out.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if out.ResponseTimeout <= 0 {
		out.ResponseTimeout = DefaultResponseTimeout
	}
	if out.ConnectTimeout <= 0 {
		out.ConnectTimeout = DefaultConnectTimeout
	}
	if out.MaxRequestBytes <= 0 {
		out.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.PublicURL != "" {
		pub, err := checkPublicURL(out.PublicURL)
		if err != nil {
			return out, &SettingError{Field: "PublicURL", Err: err}
		}
		out.PublicURL = pub
	}
	routes := map[string]Route{}
	if out.RoutesFile != "" {
		file, err := LoadRoutes(out.RoutesFile)
		if err != nil {
			if errors.Is(err, errRoutesFile) {
				err = &SettingError{Field: "RoutesFile", Err: err}
			}
			return out, err
		}
		for k, v := range file {
			routes[k] = v
		}
	}
	for k, v := range c.Routes {
		routes[k] = v
	}
	for name, r := range routes {
		if err := checkEndpoint(r.Endpoint); err != nil {
			field := "Routes"
			if _, ok := c.Routes[name]; !ok {
				field = "RoutesFile"
			}
			return out, &SettingError{Field: field, Err: fmt.Errorf("envbind: route %q: %w", name, err)}
		}
	}
	out.Routes = routes
	if out.BaseURL != "" {
		if err := checkEndpoint(out.BaseURL); err != nil {
			return out, &SettingError{Field: "BaseURL", Err: fmt.Errorf("envbind: BaseURL: %w", err)}
		}
	}
	return out, nil
}

// MaxRoutesFileBytes bounds a routes file: one longer, or one that is
// not a regular file (a named pipe, a device), is refused unread rather
// than held in memory or waited on.
const MaxRoutesFileBytes = 1 << 20

// errRoutesFile marks a routes file that was read and is malformed.
var errRoutesFile = errors.New("is not a JSON object of {endpoint, api_key}")

// SettingError is a Config setting Check or New refuses for what it
// says, as opposed to a routes file that could not be read: Field names
// the Config field ("PublicURL", "BaseURL", "Routes" or "RoutesFile").
type SettingError struct {
	Field string
	Err   error
}

func (e *SettingError) Error() string { return e.Err.Error() }

func (e *SettingError) Unwrap() error { return e.Err }

// LoadRoutes reads a routes file: a JSON object mapping driver names to
// {"endpoint", "api_key"?}.
func LoadRoutes(path string) (map[string]Route, error) {
	b, err := fsutil.ReadRegular(path, MaxRoutesFileBytes)
	if err != nil {
		return nil, fmt.Errorf("envbind: routes file: %w", err)
	}
	routes, err := parseRoutes(b)
	if err != nil {
		return nil, fmt.Errorf("envbind: routes file %s %w: %w", path, errRoutesFile, err)
	}
	return routes, nil
}

// parseRoutes decodes the routes of a routes file strictly: one JSON
// object, no unknown fields, no name twice in one object, nothing after
// it. The decoder's messages
// quote no values, but they quote unknown field names, which may hold an
// api_key the file spells out (a key typed where a name goes): every
// api_key value is redacted from them.
func parseRoutes(b []byte) (map[string]Route, error) {
	var routes map[string]Route
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&routes); err != nil {
		return nil, redactAPIKeys(b, err)
	}
	// Decoder.More answers false before a stray closing brace or bracket;
	// only the end of the input may follow the value.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON object")
	}
	if routes == nil {
		return nil, errors.New("null is not a routes object")
	}
	// The decoder keeps the last of two members of one name: a route
	// named twice, or a field given twice, would lose the other without
	// a word.
	if at, key, dup := envapi.DuplicateKey(b); dup {
		if at == "" {
			return nil, redactAPIKeys(b, fmt.Errorf("route %q is named twice", key))
		}
		return nil, redactAPIKeys(b, fmt.Errorf("%q is given twice in route %s", key, at))
	}
	return routes, nil
}

// minRedactedKey is the length from which an api_key is redacted from a
// routes file's error: a shorter one would blank out words of the message.
const minRedactedKey = 4

// redactAPIKeys answers err with every api_key value of the routes file b
// (the string value of a field whose name matches "api_key" as the decoder
// matches names, at any depth, as far as b can be read) replaced by
// [redacted] in its message; err itself when its message holds none.
func redactAPIKeys(b []byte, err error) error {
	msg := err.Error()
	redacted := msg
	for _, key := range apiKeyValues(b) {
		redacted = strings.ReplaceAll(redacted, key, "[redacted]")
	}
	if redacted == msg {
		return err
	}
	return errors.New(redacted)
}

// apiKeyValues answers the api_key values of the routes file b that are
// at least minRedactedKey bytes long, reading its tokens up to its end or
// its first error.
func apiKeyValues(b []byte) []string {
	// Each open object or array; in an object, whether a name comes next.
	type frame struct{ object, name bool }
	var stack []frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].name = true
		}
	}
	var keys []string
	isKey := false
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			valueDone()
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].name {
			name, _ := tok.(string)
			isKey = strings.EqualFold(name, "api_key")
			stack[n-1].name = false
			continue
		}
		switch v := tok.(type) {
		case json.Delim: // '{' or '['
			stack = append(stack, frame{object: v == '{', name: v == '{'})
			isKey = false
			continue
		case string:
			if isKey && len(v) >= minRedactedKey {
				keys = append(keys, v)
			}
		}
		isKey = false
		valueDone()
	}
}

var errEndpoint = errors.New("endpoint must be an https URL naming a host, or http on a loopback host, without credentials, query, fragment or white space")

// errEndpointPort reports an endpoint naming a port no connection can be
// made to.
var errEndpointPort = errors.New("endpoint must name a port from 1 to 65535, or none")

// checkEndpoint accepts HTTPS URLs and HTTP URLs whose host is loopback.
// A URL naming only a port names no host: it would be dialled on this
// machine.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !netutil.BaseURLText(raw) || !netutil.HostName(u.Hostname()) || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errEndpoint
	}
	if !netutil.DialablePort(u.Port()) {
		return errEndpointPort
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
	}
	return errEndpoint
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkSessionURL accepts an absolute http(s) URL of at most 2048 bytes
// naming a host (without white space, control or invisible format
// characters), and a port a connection can be made to (or none), without
// userinfo, query or fragment. The error never quotes the URL.
func checkSessionURL(raw string) error {
	u, err := url.Parse(raw)
	if len(raw) > 2048 || err != nil || (u.Scheme != "http" && u.Scheme != "https") || !netutil.HostName(u.Hostname()) ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("url must be an absolute http(s) URL of at most 2048 bytes naming a host, without userinfo, query or fragment")
	}
	if !netutil.DialablePort(u.Port()) {
		return errors.New("url must name a port from 1 to 65535, or none")
	}
	return nil
}

// errPublicURL reports an unusable public URL. It does not quote the URL:
// one with userinfo carries credentials.
var errPublicURL = errors.New("envbind: PublicURL must be an absolute http(s) URL without userinfo, query or fragment")

// checkPublicURL answers u without trailing slashes, or an error when it
// is not an absolute http(s) URL, or carries userinfo (every provider
// would be handed its credentials), a query or a fragment (the callback
// and reporter paths are appended to it).
func checkPublicURL(u string) (string, error) {
	pub, err := url.Parse(u)
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" ||
		pub.User != nil || strings.ContainsAny(u, "?#") {
		return "", errPublicURL
	}
	return strings.TrimRight(u, "/"), nil
}
