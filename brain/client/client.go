package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// ErrClosed reports a call on a closed Client.
var ErrClosed = errors.New("client: closed")

// ErrRedirected reports a call other than a GET answered with a redirect
// (a 301, 302 or 303: a proxy sending clients from http to https, or to a
// moved address) that the HTTP client followed with a GET: the call was
// not sent to Brain, and the GET's answer is not its answer. It is not
// sent again; point the client at the address redirected to.
var ErrRedirected = errors.New("client: redirected as a GET")

// Options configures a Client. The zero value (or nil) is valid.
type Options struct {
	// Token is the server's bearer token.
	Token string
	// HTTPClient sends the requests (nil: a client of its own, whose
	// connections Close releases). A stream that goes silent closes its
	// idle connections (see Session.Events).
	HTTPClient *http.Client
	// Retries is how often a call is sent again (0 selects 2; negative
	// disables): a mutation that got no answer (see UncertainError) with
	// the same idempotency key, and a read (a GET other than a health
	// probe) that got no answer, a proxy's answer in the server's stead
	// (a 408 or 5xx without an ApiError, a 2xx that is not Brain's
	// answer), or was answered 503 or 429.
	// The pauses grow from 100 ms to 2 s, or last what an answer's
	// Retry-After asks for; a call asked to wait longer than 30 s, or
	// past ctx's deadline, is not sent again and fails with that answer.
	// A call whose ctx ends meanwhile fails with ctx's error and that
	// answer.
	Retries int
	// MaxAnswerBytes bounds the body of a successful answer the client
	// reads (0 selects 256 MiB); a longer one fails the call with
	// ErrAnswerTooLarge.
	MaxAnswerBytes int64
}

// Client talks to one Brain server.
type Client struct {
	base    string
	token   string
	hc      *http.Client
	own     bool
	retries int
	// maxAnswer bounds the body of a 2xx answer.
	maxAnswer int64
	// maxLine bounds a line of an event stream (0: maxSSELine).
	maxLine int
	// beatMs is the heartbeat interval in milliseconds the server named
	// on the client's latest stream (0: none yet).
	beatMs atomic.Int64
	// assumedBeat is the heartbeat interval assumed before a server
	// named one (defaultHeartbeat when the client was made).
	assumedBeat time.Duration
	closed      atomic.Bool
	// life ends when the client closes: every request, stream and host
	// connection of the client runs under it.
	life context.Context
	stop context.CancelFunc

	// hostSem holds the host's registration: a token in it while Host
	// or ResumeHost sets host.
	hostSem chan struct{}
	host    *Host

	// Sessions creates, lists and opens sessions.
	Sessions *Sessions
	// Agentloops uploads and looks up agentloop modules.
	Agentloops *Agentloops
	// Tools uploads and looks up Tool modules.
	Tools *Tools
	// Models lists the server's model catalogue.
	Models *Models
}

// New returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:8080").
func New(baseURL string, opts *Options) (*Client, error) {
	if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
		return nil, fmt.Errorf("client: base URL %s must start with http:// or https://", printableURL(baseURL))
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		// The parse error quotes the URL, a password in it included: it
		// is not wrapped, and every call would fail with it.
		return nil, fmt.Errorf("client: base URL %s does not parse as a URL", printableURL(baseURL))
	}
	// Paths are appended to the base URL as text: a query or a fragment
	// would swallow them, and no host leaves nothing to call.
	switch {
	case u.Host == "":
		return nil, fmt.Errorf("client: base URL %s names no host", printableURL(baseURL))
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(baseURL, "#"):
		return nil, fmt.Errorf("client: base URL %s has a query or a fragment: want a base URL such as http://127.0.0.1:8080", printableURL(baseURL))
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: o.Token, hc: o.HTTPClient, retries: o.Retries, maxAnswer: o.MaxAnswerBytes}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// A client talks to one server: keep a connection per concurrent
		// caller instead of the default two, so that concurrent calls do
		// not open (and leave in TIME_WAIT) a connection each.
		tr.MaxIdleConnsPerHost = maxIdleConns
		c.hc = &http.Client{Transport: tr}
		c.own = true
	}
	switch {
	case c.retries == 0:
		c.retries = 2
	case c.retries < 0:
		c.retries = 0
	}
	if c.maxAnswer <= 0 {
		c.maxAnswer = maxAnswerBytes
	}
	return c.init(), nil
}

func (c *Client) init() *Client {
	if c.assumedBeat == 0 {
		c.assumedBeat = defaultHeartbeat
	}
	c.life, c.stop = context.WithCancel(context.Background())
	c.hostSem = make(chan struct{}, 1)
	c.Sessions = &Sessions{c: c}
	c.Agentloops = &Agentloops{c: c}
	c.Tools = &Tools{c: c}
	c.Models = &Models{c: c}
	return c
}

// WithToken returns a client of the same server with another token. It
// shares this client's HTTP client and retry settings and has its own
// lifetime: closing either client leaves the other usable.
func (c *Client) WithToken(token string) *Client {
	n := &Client{base: c.base, token: token, hc: c.hc, own: c.own, retries: c.retries, maxAnswer: c.maxAnswer, assumedBeat: c.assumedBeat}
	n.beatMs.Store(c.beatMs.Load())
	return n.init()
}

// Close releases the client's connections and local handlers: open event
// streams end, host connections close and the contexts of running host
// handlers are cancelled (Close does not wait for handlers that ignore
// theirs). When the client made its own HTTP client, closing it (or any
// client WithToken derived from it) closes that HTTP client's idle
// connections; requests of other clients sharing it are not affected.
// It is idempotent; later calls fail with ErrClosed. Stored sessions are
// not interrupted, ended or deleted.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.stop()
	if c.own {
		c.hc.CloseIdleConnections()
	}
	return nil
}

// maxIdleConns bounds the idle connections the client's own transport
// keeps to the server.
const maxIdleConns = 256

// bind derives a context that also ends when the client closes.
func (c *Client) bind(ctx context.Context) (context.Context, func()) {
	bctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.life, func() { cancel(ErrClosed) })
	return bctx, func() { stop(); cancel(nil) }
}

// closedErr answers ErrClosed when the client closed while err happened.
func (c *Client) closedErr(err error) error {
	if c.closed.Load() && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

// CallOption adjusts one call.
type CallOption func(*call)

type call struct {
	key    string
	header http.Header
	// bearer, when set, authorizes the request instead of the client's
	// token (a host's routes take the host's own).
	bearer string
	// raw is sent as is with content type ctype instead of a JSON body.
	raw   []byte
	ctype string
	// once sends a read once (see sendOnce).
	once bool
	// want lists the success statuses Brain answers the call with (nil:
	// any 2xx); another 2xx is not Brain's answer (see unexpected).
	want []int
	// check, when set, tells whether a 2xx answer's body is one Brain
	// answers the call with; one it is not is no answer of Brain's (see
	// notBrains).
	check func(*response) error
	// secret says a 2xx answer may hold a credential: one that is not
	// Brain's is not quoted in the error.
	secret bool
	// secrets are credentials the request's body carries (a model's API
	// key, an environment's credential): an answer that quotes them has
	// them redacted, as the bearer token.
	secrets []string
}

// carrying names the credentials a request's body carries, which it
// holds as written and as JSON escapes them.
func carrying(secrets ...string) CallOption {
	return func(c *call) {
		for _, s := range secrets {
			c.secrets = append(c.secrets, s)
			if b, err := json.Marshal(s); err == nil {
				if esc := string(b[1 : len(b)-1]); esc != s {
					c.secrets = append(c.secrets, esc)
				}
			}
		}
	}
}

// answers checks the body of a 2xx answer as decode does, and keeps the
// value decoded for decode: something in Brain's stead that answers
// every request alike (a static site at the base URL, a captive portal's
// page, a proxy that does not pass the call on, another server's JSON)
// gives the call no answer. A keyed write may or may not have reached
// Brain; a read is sent again as one a proxy answered in Brain's stead.
func answers[T any](extra ...string) CallOption {
	return func(c *call) {
		c.check = func(r *response) error {
			v, err := decode[T](r, extra...)
			if err == nil {
				r.value = v
			}
			return err
		}
		if _, ok := any(new(T)).(*api.HostRegistration); ok {
			c.secret = true
		}
	}
}

// answersJSON checks that a 2xx answer is JSON, for calls whose answer
// is any value (an environment's or a tool's result).
func answersJSON(c *call) {
	c.check = func(r *response) error {
		if !json.Valid(r.body) {
			return errors.New("client: malformed answer: not JSON")
		}
		return nil
	}
}

// expect names the success statuses Brain answers a call with: a 204 of
// a DELETE, a cancel or a health probe, a 202 or 200 of a message.
func expect(status ...int) CallOption { return func(c *call) { c.want = status } }

// IdempotencyKey sets the call's Idempotency-Key (1..256 bytes). Reusing a
// key with the same request replays the first answer. Keys are scoped by
// the kind of request: a submission (Submit, or Send with a ctx that can
// be cancelled) and a synchronous send do not share them, so a retry keeps
// both the key and the kind.
func IdempotencyKey(key string) CallOption { return func(c *call) { c.key = key } }

// keyed reports whether opts set an Idempotency-Key.
func keyed(opts []CallOption) bool {
	var co call
	for _, o := range opts {
		o(&co)
	}
	return co.key != ""
}

func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// response is an answered request.
type response struct {
	status int
	header http.Header
	body   []byte
	// value is the body as the call's check (answers) decoded it.
	value any
}

// segment escapes s as one path segment: "/", "?" and "%" are escaped by
// url.PathEscape, and "." and ".." become "%2E" and "%2E%2E", which a
// server that cleans paths leaves in place.
func segment(s string) string {
	switch s {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(s)
}

// do sends a request with a JSON body (nil for none) and answers a 2xx
// response, or the ApiError of any other. idempotent requests carry a key
// and are retried with it when no answer arrived; GET requests are
// retried when no answer arrived or the server was overloaded, unless
// sendOnce is among opts.
func (c *Client) do(ctx context.Context, method, path string, in any, idempotent bool, opts []CallOption) (*response, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	ctx, done := c.bind(ctx)
	defer done()
	resp, err := c.send(ctx, method, path, in, idempotent, opts)
	if err != nil {
		return nil, c.closedErr(err)
	}
	return resp, nil
}

func (c *Client) send(ctx context.Context, method, path string, in any, idempotent bool, opts []CallOption) (*response, error) {
	var co call
	for _, o := range opts {
		o(&co)
	}
	if idempotent && co.key == "" {
		co.key = newKey()
	}
	body := co.raw
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, fmt.Errorf("client: encode %s %s: %w", method, path, err)
		}
	}
	// A read (GET) is safe to send again: it is, as a keyed write is,
	// when no answer arrived, and also when it was refused for a while
	// (Brain's 503 overloaded while it drains, a rate limit's 429).
	safe := method == http.MethodGet && !idempotent && !co.once
	attempts := 1
	if idempotent || safe {
		attempts += c.retries
	}
	// uncertain says an attempt may have reached the server and its
	// answer did not arrive: the call may have been carried out.
	uncertain := false
	var lastErr error
	var asked time.Duration // the wait the last answer's Retry-After asked for
retry:
	for i := range attempts {
		if i > 0 {
			pause := max(pauseBefore(i), asked)
			if deadline, ok := ctx.Deadline(); pause > maxRetryAfter || (ok && time.Until(deadline) < pause) {
				// The wait would outlast ctx, or the server asked for
				// longer than the client waits: the last answer stands.
				break
			}
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				lastErr = endedAfter(fmt.Errorf("client: %s %s: waiting to send it again: %w", method, path, ctx.Err()), lastErr)
				break retry
			}
		}
		a := c.roundTrip(ctx, method, path, body, co)
		if a.err == nil {
			return a.resp, nil
		}
		var ae *api.ApiError
		if ctx.Err() != nil && !errors.As(a.err, &ae) {
			// The attempt ended with ctx: the error keeps the answer
			// of the attempt before it.
			a.err = endedAfter(a.err, lastErr)
		}
		lastErr, asked = a.err, a.retryAfter
		if safe {
			if a.answered && (!errors.As(a.err, &ae) || ae.Code != api.CodeOverloaded) {
				return nil, a.err
			}
			if ctx.Err() != nil || c.closed.Load() {
				break
			}
			continue
		}
		if a.refused {
			// A proxy refused the call without passing it on: this
			// attempt was not carried out, an earlier one may have been.
			break
		}
		if a.answered {
			if !idempotent || !errors.As(a.err, &ae) || ae.Code != api.CodeOverloaded {
				// The server's answer of the key: the outcome of the
				// call, or a refusal of a call an earlier attempt did
				// not carry out either.
				return nil, a.err
			}
			// Brain answers overloaded both to a call it refused before
			// looking its key up (a drain, a full disk) and to one whose
			// outcome it does not know (a node that lost the session's
			// lease while the call ran, a storage commit whose outcome
			// is unknown): the call, or an earlier attempt, may have
			// been carried out.
			uncertain = true
			break
		}
		uncertain = uncertain || a.reached
		if ctx.Err() != nil || c.closed.Load() {
			break
		}
	}
	if idempotent && uncertain {
		return nil, &UncertainError{Key: co.key, Err: lastErr}
	}
	return nil, lastErr
}

// endedAfter answers err, with which ctx ended a call while it waited to
// be sent again or was, and also the error of the attempt before (last)
// when there was one: errors.Is finds ctx's error, and errors.As the
// *api.ApiError of that attempt's answer, as a followed stream's error
// does.
func endedAfter(err, last error) error {
	if last == nil {
		return err
	}
	return fmt.Errorf("%w; the attempt before failed: %w", err, last)
}

// attempt is the outcome of one request.
type attempt struct {
	resp *response
	err  error
	// answered says the server answered the request itself: its
	// answer is the outcome, or a refusal. A lost connection, a proxy's
	// answer in the server's stead and a retryable ambiguous answer (a
	// node of a cluster lost the answer of the node it forwarded the
	// request to) are no answer: the request may be sent again with its
	// key.
	answered bool
	// reached says the request may have reached the server: its head
	// was written.
	reached bool
	// refused says a proxy refused the request without passing it on
	// (a 429 that is not an ApiError, a redirect the HTTP client
	// followed with a GET): not sent again, and not carried out.
	refused bool
	// retryAfter is the wait an error answer's Retry-After asked for.
	retryAfter time.Duration
}

func (c *Client) roundTrip(ctx context.Context, method, path string, body []byte, co call) attempt {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return attempt{err: fmt.Errorf("client: %s %s: %w", method, path, err)}
	}
	switch {
	case co.ctype != "":
		req.Header.Set("Content-Type", co.ctype)
	case body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	if co.key != "" {
		req.Header.Set("Idempotency-Key", co.key)
	}
	for k, vs := range co.header {
		req.Header[k] = vs
	}
	bearer := c.token
	if co.bearer != "" {
		bearer = co.bearer
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	// The credentials an answer may quote: the body's and the bearer.
	secrets := append(co.secrets[:len(co.secrets):len(co.secrets)], bearer)
	resp, err := c.hc.Do(req)
	if err != nil {
		return attempt{err: fmt.Errorf("client: %s %s: %w", method, path, err), reached: wrote.Load()}
	}
	defer resp.Body.Close()
	if resp.Request != nil && resp.Request.Method != method {
		// Brain redirects no call: something in front of it answered
		// the call with a redirect and did not pass it on.
		return attempt{err: fmt.Errorf("client: %s %s: %w to %s", method, path, ErrRedirected, resp.Request.URL.Redacted()), refused: true}
	}
	if resp.StatusCode/100 == 2 {
		b, err := readAnswer(resp.Body, resp.ContentLength, c.maxAnswer)
		if err != nil {
			// An answer too large is the server's answer all the same:
			// the call is not sent again.
			return attempt{err: fmt.Errorf("client: %s %s: read answer: %w", method, path, err), answered: errors.Is(err, ErrAnswerTooLarge), reached: true}
		}
		if co.want != nil && !slices.Contains(co.want, resp.StatusCode) {
			// Something that answers every request alike (a proxy
			// that does not pass the call on, a static site at the
			// base URL) answered in Brain's stead: the call may or may
			// not have reached Brain.
			return attempt{err: fmt.Errorf("client: %s %s: %w", method, path, unexpected(resp.StatusCode, co.want, redact(b, secrets...))), reached: true}
		}
		r := &response{status: resp.StatusCode, header: resp.Header, body: b}
		if co.check != nil {
			if err := co.check(r); err != nil {
				quoted := redact(b, secrets...)
				if co.secret {
					quoted = []byte("(not quoted: it may hold a credential)")
				}
				return attempt{err: fmt.Errorf("client: %s %s: %w", method, path, notBrains(resp.StatusCode, err, quoted)), reached: true}
			}
		}
		return attempt{resp: r, answered: true, reached: true}
	}
	b, err := readError(resp.Body, secrets...)
	if err != nil {
		return attempt{err: fmt.Errorf("client: %s %s: read answer: %w", method, path, err), reached: true}
	}
	ae := apiError(resp.StatusCode, b)
	err = fmt.Errorf("client: %s %s: %w", method, path, ae)
	wait := retryAfter(resp.Header, time.Now())
	if rateLimited(resp.StatusCode, b) {
		return attempt{err: err, refused: true, retryAfter: wait}
	}
	answered := !fromProxy(resp.StatusCode, b) && (ae.Code != api.CodeAmbiguous || !ae.Retryable)
	return attempt{err: err, answered: answered, reached: true, retryAfter: wait}
}

func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// apiError decodes an error answer; a body that is not an ApiError becomes
// one with the status's code, quoting the body's start: invalid_request
// for a 400, 405, 413, 415 or 422, unauthorized for a 401 or 403,
// not_found for a 404 or 410, conflict for a 409, overloaded (retryable)
// for a 429 or 503, and internal for any other. Its message says the
// answer is not Brain's, which answers every error with an ApiError. A
// proxy's answer in the server's stead (fromProxy: a 408 or any 5xx) is
// retryable: the server did not answer.
func apiError(status int, b []byte) *api.ApiError {
	if e, ok := brainsError(b); ok {
		return e
	}
	code := api.CodeInternal
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType, http.StatusRequestEntityTooLarge:
		// A request of a form the server, or a proxy's rule, does not
		// take: sent again, it is refused again.
		code = api.CodeInvalidRequest
	case http.StatusUnauthorized, http.StatusForbidden:
		// The server answers a 403 with an ApiError (not_granted); a
		// proxy's 403 (an access rule) is one the caller acts on as on
		// a 401: with other credentials.
		code = api.CodeUnauthorized
	case http.StatusNotFound, http.StatusGone:
		code = api.CodeNotFound
	case http.StatusConflict:
		code = api.CodeConflict
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		code = api.CodeOverloaded
	}
	text := quote(b)
	if text == "" {
		text = "(empty body)"
	}
	return &api.ApiError{Code: code, Message: fmt.Sprintf("HTTP %d not answered by Brain (the body is not Brain's error JSON: a proxy or gateway in front of it, or another server, answered): %s", status, text),
		Retryable: api.DefaultRetryable(code) || fromProxy(status, b)}
}

// unexpected is the error of a success answer Brain does not give the
// call (a status other than want): retryable, with code internal, quoting
// the body's start, as an error answer that is not Brain's.
func unexpected(status int, want []int, b []byte) *api.ApiError {
	text := quote(b)
	if text == "" {
		text = "(empty body)"
	}
	ws := make([]string, len(want))
	for i, w := range want {
		ws[i] = strconv.Itoa(w)
	}
	return &api.ApiError{Code: api.CodeInternal, Retryable: true,
		Message: fmt.Sprintf("HTTP %d not answered by Brain, which answers this call %s (a proxy or gateway in front of it, or another server, answered): %s", status, strings.Join(ws, " or "), text)}
}

// brainsError decodes an error answer's body as Brain's ApiError: a JSON
// object whose code is one Brain answers, an API error code (api.ErrorCodes)
// or, for a turn that failed, its failure code (api.FailureCodes). A
// proxy's or cloud gateway's own error JSON may have a "code" field too
// ("InternalError", "ServiceUnavailable"): with a code outside that
// closed set, it is not Brain's answer.
func brainsError(b []byte) (*api.ApiError, bool) {
	var e api.ApiError
	if json.Unmarshal(b, &e) != nil || (!slices.Contains(api.ErrorCodes, e.Code) && !slices.Contains(api.FailureCodes, e.Code)) {
		return nil, false
	}
	if len(e.Message) > maxMessageBytes {
		// Brain's messages are at most maxMessageBytes long: a longer
		// one (of something in Brain's stead) is cut, so that an error
		// printed or logged stays short.
		e.Message = clip(e.Message, maxMessageBytes) + " [cut]"
	}
	return &e, true
}

// maxMessageBytes bounds an ApiError's message, as Brain bounds those it
// answers.
const maxMessageBytes = 4096

// notBrains is the error of a success answer whose body is none Brain
// answers the call with (why says how): retryable, with code internal,
// as unexpected's.
func notBrains(status int, why error, b []byte) *api.ApiError {
	text := quote(b)
	if text == "" {
		text = "(empty body)"
	}
	return &api.ApiError{Code: api.CodeInternal, Retryable: true,
		Message: fmt.Sprintf("HTTP %d not answered by Brain (the body is not Brain's answer of this call: %v; a proxy or gateway in front of it, or another server, answered): %s", status, why, text)}
}

// fromProxy reports whether an error answer is a proxy's in the server's
// stead: a 408 (it gave up waiting for the request itself) or any 5xx (a
// load balancer's whose upstream is down, restarting, failed or did not
// answer in time; a CDN's 520 to 524 when the origin answered nothing it
// could relay, refused or did not take the connection, or did not answer
// in time; a gateway's own 500) whose body is not an ApiError. Brain
// answers every error with one, its 500s included (a handler that panics
// drops the connection instead): such an answer says nothing of whether
// the request reached Brain, or of its outcome there.
func fromProxy(status int, b []byte) bool {
	if status != http.StatusRequestTimeout && status < 500 {
		return false
	}
	_, ok := brainsError(b)
	return !ok
}

// rateLimited reports whether an error answer is a proxy's refusal of a
// request it did not pass on: a 429 whose body is not an ApiError.
func rateLimited(status int, b []byte) bool {
	if status != http.StatusTooManyRequests {
		return false
	}
	_, ok := brainsError(b)
	return !ok
}

// decode decodes a 2xx answer. An answer that is JSON null, one of the
// API's object types without a field every such answer holds, or an
// object without (or with null in) a field named in extra is malformed: it
// is an error, not a zero value. A field named in extra with a trailing
// "?" must be present but may be null. The API's types are checked on
// the decoded value, so that their answers are decoded once.
func decode[T any](r *response, extra ...string) (T, error) {
	if v, ok := r.value.(T); ok {
		// The call's check decoded the answer, with the same fields.
		return v, nil
	}
	var v T
	body := bytes.TrimSpace(r.body)
	if string(body) == "null" {
		return v, fmt.Errorf("client: malformed answer: null where %T was expected", v)
	}
	if len(extra) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return v, fmt.Errorf("client: decode answer: %w", err)
		}
		for _, f := range extra {
			name, nullable := strings.CutSuffix(f, "?")
			raw, ok := obj[name]
			if !ok || (!nullable && string(bytes.TrimSpace(raw)) == "null") {
				return v, fmt.Errorf("client: malformed answer: %T without %s", v, name)
			}
		}
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("client: decode answer: %w", err)
	}
	if missing := lacks(&v); missing != "" {
		// The answer is not quoted here: it may echo the request's
		// credentials. The call's error quotes it with them redacted
		// (see notBrains).
		return v, fmt.Errorf("client: malformed answer: %T without %s", v, missing)
	}
	return v, nil
}

// lacks names a field every answer of v's type holds that the decoded v
// lacks (absent, or null where a value is required), or "".
func lacks(v any) string {
	switch x := v.(type) {
	case *api.SessionSummary:
		switch {
		case x.SessionID == "":
			return "session_id"
		case x.Status == "":
			return "status"
		case x.LastSequence == 0:
			return "last_sequence"
		}
	case *api.SessionList:
		if x.Sessions == nil {
			return "sessions"
		}
	case *api.SessionTranscript:
		if x.Messages == nil {
			return "messages"
		}
	case *api.TranscriptPart:
		if x.Messages == nil {
			return "messages"
		}
	case *api.EventPage:
		if x.Events == nil {
			return "events"
		}
	case *api.HostRegistration:
		switch {
		case x.HostID == "":
			return "host_id"
		case x.Token == "":
			return "token"
		}
	case *api.SequenceAnswer:
		if x.Sequence == 0 {
			return "sequence"
		}
	case *api.ModelResult:
		if x.StopReason == "" {
			return "stop_reason"
		}
	case *Admission:
		switch {
		case x.ID == "":
			return "id"
		case x.Status == "":
			return "status"
		}
	case *ModelList:
		if x.Providers == nil {
			return "providers"
		}
	}
	return ""
}

// decodeSummary decodes a SessionSummary answer.
func decodeSummary(r *response) (api.SessionSummary, error) {
	return decode[api.SessionSummary](r)
}
