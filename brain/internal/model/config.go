package model

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Provider names of the hosted dialects.
const (
	// ProviderOpenAI speaks the OpenAI Responses API, stateless (store:false).
	ProviderOpenAI = "openai"
	// ProviderOpenAIChat speaks OpenAI Chat Completions, the dialect of
	// local servers (llama.cpp, vLLM, Ollama) and compatible gateways.
	ProviderOpenAIChat = "openai_chat"
	// ProviderAnthropic speaks the Anthropic Messages API.
	ProviderAnthropic = "anthropic"
)

// Dialects: the wire protocols a provider may speak.
const (
	DialectOpenAIResponses = "openai_responses"
	DialectOpenAIChat      = "openai_chat_completions"
	DialectAnthropic       = "anthropic_messages"
)

// Endpoint is a further provider: a name sessions pin, the dialect it
// speaks and its base URL (from BRAIN_PROVIDERS_FILE). An endpoint named
// like a built-in provider replaces it.
type Endpoint struct {
	Name    string
	Dialect string
	BaseURL string
}

// Default base URLs and protocol constants.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com/v1"
	// AnthropicVersion is the anthropic-version header every request carries.
	AnthropicVersion = "2023-06-01"
	// DefaultAnthropicMaxTokens is max_tokens (required by Anthropic) when
	// the request sets no max_output_tokens.
	DefaultAnthropicMaxTokens = 8192
)

// Limits bound every model call. A zero field selects its default; a
// negative one removes the bound.
type Limits struct {
	// MaxOutputBytes bounds the assembled message: text, tool inputs and
	// native blocks, each block with what it adds to the message around
	// its content (default 4 MiB; BRAIN_MAX_MODEL_OUTPUT_BYTES).
	MaxOutputBytes int64
	// MaxDeltaBytes bounds one live delta; longer fragments are split
	// (default 64 KiB; BRAIN_MAX_MODEL_DELTA_BYTES).
	MaxDeltaBytes int64
	// MaxStreamBytes bounds the bytes read from one response body
	// (default 32 MiB; BRAIN_MAX_MODEL_STREAM_BYTES).
	MaxStreamBytes int64
	// MaxFrameBytes bounds one server-sent event (default 256 KiB;
	// BRAIN_MAX_MODEL_FRAME_BYTES).
	MaxFrameBytes int64
	// MaxErrorBytes bounds the body of an error answer that is read
	// (default 16 KiB; BRAIN_MAX_MODEL_ERROR_BYTES).
	MaxErrorBytes int64
	// Timeout bounds a whole call (default 120 s; BRAIN_MAX_MODEL_SECS).
	Timeout time.Duration
	// ConnectTimeout bounds connecting, TLS included (default 10 s;
	// BRAIN_MAX_MODEL_CONNECT_SECS).
	ConnectTimeout time.Duration
}

// DefaultLimits are the bounds of reference section 6.
var DefaultLimits = Limits{
	MaxOutputBytes: 4 << 20,
	MaxDeltaBytes:  64 << 10,
	MaxStreamBytes: 32 << 20,
	MaxFrameBytes:  256 << 10,
	MaxErrorBytes:  16 << 10,
	Timeout:        120 * time.Second,
	ConnectTimeout: 10 * time.Second,
}

func (l Limits) withDefaults() Limits {
	pick := func(v, d int64) int64 {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	pickD := func(v, d time.Duration) time.Duration {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	d := DefaultLimits
	return Limits{
		MaxOutputBytes: pick(l.MaxOutputBytes, d.MaxOutputBytes),
		MaxDeltaBytes:  pick(l.MaxDeltaBytes, d.MaxDeltaBytes),
		MaxStreamBytes: pick(l.MaxStreamBytes, d.MaxStreamBytes),
		MaxFrameBytes:  pick(l.MaxFrameBytes, d.MaxFrameBytes),
		MaxErrorBytes:  pick(l.MaxErrorBytes, d.MaxErrorBytes),
		Timeout:        pickD(l.Timeout, d.Timeout),
		ConnectTimeout: pickD(l.ConnectTimeout, d.ConnectTimeout),
	}
}

// Config configures the hosted model clients. The zero value is valid:
// default base URLs and default limits.
type Config struct {
	// OpenAIBaseURL is the base of the openai and openai_chat providers
	// (BRAIN_OPENAI_BASE_URL; default DefaultOpenAIBaseURL). Requests go to
	// {base}/responses and {base}/chat/completions.
	OpenAIBaseURL string
	// AnthropicBaseURL is the base of the anthropic provider
	// (BRAIN_ANTHROPIC_BASE_URL; default DefaultAnthropicBaseURL).
	// Requests go to {base}/messages.
	AnthropicBaseURL string
	// Limits bound every call.
	Limits Limits
	// DefaultAPIKeys are the operator's keys by provider name, used when a
	// session pins no api_key of its own (e.g. from OPENAI_API_KEY or
	// ANTHROPIC_API_KEY). Empty: such a session sends no credential.
	DefaultAPIKeys map[string]string
	// Endpoints add providers, or replace built-in ones of the same name.
	// A session without an api_key uses DefaultAPIKeys[Name].
	Endpoints []Endpoint
	// HTTPClient sends the requests; nil builds one whose dialer honours
	// Limits.ConnectTimeout. Its own Timeout should be zero: calls are
	// bounded by Limits.Timeout and the caller's context. Its redirect
	// policy is replaced: a redirect is never followed.
	HTTPClient *http.Client
	// Propagate sends the W3C trace context of each call's context
	// (traceparent, tracestate) with its request; false sends none.
	Propagate bool
}

// New returns the providers of cfg: scripted, openai, openai_chat and
// anthropic. Each client uses the session's API key (spec.APIKey, else
// Config.DefaultAPIKeys) and model name (spec.Name); no key sends no
// credential, which suits local servers; a key holding a control character
// is refused (ErrInvalidSpec), and one with spaces or tabs around it is
// sent without them. A base URL must be http or https without user information.
func New(cfg Config) (Providers, error) {
	openaiBase, err := baseURL("OpenAIBaseURL", cfg.OpenAIBaseURL, DefaultOpenAIBaseURL)
	if err != nil {
		return nil, err
	}
	anthropicBase, err := baseURL("AnthropicBaseURL", cfg.AnthropicBaseURL, DefaultAnthropicBaseURL)
	if err != nil {
		return nil, err
	}
	limits := cfg.Limits.withDefaults()
	hc := cfg.HTTPClient
	if hc == nil {
		hc = newHTTPClient(limits.ConnectTimeout)
	} else {
		c := *hc
		hc = &c
	}
	hc.CheckRedirect = noRedirects
	tr := func(spec Spec, base string) (transport, error) {
		if err := checkName(spec); err != nil {
			return transport{}, err
		}
		key := spec.APIKey
		if key == "" {
			key = cfg.DefaultAPIKeys[spec.Provider]
		}
		if err := checkKey(key); err != nil {
			return transport{}, err
		}
		// Spaces and tabs around the key (pasted with it) are not part
		// of it: a header value does not carry them, so the key the
		// provider receives, and may echo, is the one without them, and
		// that is the key errors are cleared of.
		key = strings.Trim(key, " \t")
		return transport{http: hc, base: base, key: key, limits: limits, propagate: cfg.Propagate}, nil
	}
	p := Default()
	p[ProviderOpenAI] = func(spec Spec) (Client, error) {
		t, err := tr(spec, openaiBase)
		if err != nil {
			return nil, err
		}
		return &openAIResponses{t: t, model: spec.Name}, nil
	}
	p[ProviderOpenAIChat] = func(spec Spec) (Client, error) {
		t, err := tr(spec, openaiBase)
		if err != nil {
			return nil, err
		}
		return &openAIChat{t: t, model: spec.Name, maxTokens: chatMaxTokensField(openaiBase)}, nil
	}
	p[ProviderAnthropic] = func(spec Spec) (Client, error) {
		t, err := tr(spec, anthropicBase)
		if err != nil {
			return nil, err
		}
		return newAnthropic(t, spec.Name), nil
	}
	for _, e := range cfg.Endpoints {
		if e.Name == "" || e.Name == ProviderScripted {
			return nil, fmt.Errorf("model: endpoint name %q is reserved or empty", e.Name)
		}
		base, err := baseURL("Endpoints["+e.Name+"].BaseURL", e.BaseURL, "")
		if err != nil {
			return nil, err
		}
		var open func(t transport, name string) Client
		switch e.Dialect {
		case DialectOpenAIResponses:
			open = func(t transport, name string) Client { return &openAIResponses{t: t, model: name} }
		case DialectOpenAIChat:
			field := chatMaxTokensField(base)
			open = func(t transport, name string) Client { return &openAIChat{t: t, model: name, maxTokens: field} }
		case DialectAnthropic:
			open = func(t transport, name string) Client { return newAnthropic(t, name) }
		default:
			return nil, fmt.Errorf("model: endpoint %q: unknown dialect %q", e.Name, e.Dialect)
		}
		p[e.Name] = func(spec Spec) (Client, error) {
			t, err := tr(spec, base)
			if err != nil {
				return nil, err
			}
			return open(t, spec.Name), nil
		}
	}
	return p, nil
}

// chatMaxTokensField names the Chat Completions field that bounds the
// output. OpenAI (and Azure OpenAI) deprecated max_tokens for
// max_completion_tokens, and their reasoning models refuse max_tokens;
// compatible servers (llama.cpp, vLLM, Ollama, gateways) take max_tokens.
func chatMaxTokensField(base string) string {
	u, err := url.Parse(base)
	if err == nil {
		host := strings.ToLower(u.Hostname())
		if host == "api.openai.com" || strings.HasSuffix(host, ".openai.azure.com") {
			return "max_completion_tokens"
		}
	}
	return "max_tokens"
}

func checkName(spec Spec) error {
	if spec.Name == "" || strings.ContainsAny(spec.Name, " \t\r\n") {
		return fmt.Errorf("%w: model name %q", ErrInvalidSpec, spec.Name)
	}
	return nil
}

// checkKey refuses an API key that no HTTP header can carry: one holding
// a control character other than a tab (a line break read with the key
// from a file, say). The error does not name the key.
func checkKey(key string) error {
	for i := 0; i < len(key); i++ {
		if c := key[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Errorf("%w: the API key holds a control character (byte %d of %d), which no HTTP header can carry", ErrInvalidSpec, i+1, len(key))
		}
	}
	return nil
}

func baseURL(field, v, def string) (string, error) {
	if v == "" {
		v = def
	}
	u, err := url.Parse(v)
	if err != nil {
		// Neither the value nor the parser's error (which quotes it) is
		// shown: a malformed URL may hold a password.
		return "", fmt.Errorf("model: %s is not a URL: want an http or https URL without credentials, query or fragment", field)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// Shown without what may hold a credential: a token as the user
		// name, a password, a key in the query or the fragment.
		shown := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
		return "", fmt.Errorf("model: %s %q: want an http or https URL without credentials, query or fragment", field, shown.String())
	}
	return strings.TrimRight(v, "/"), nil
}

// noRedirects keeps a redirect as the answer. Following it would post the
// conversation again, with the credential (Go drops only Authorization and
// cookies on a redirect to another host, not x-api-key), to wherever the
// answer points.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func newHTTPClient(connect time.Duration) *http.Client {
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   connect,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}}
}
