package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/propagation"
)

// Provider error codes this package reports itself (the provider's own
// codes are passed through).
const (
	CodeConnectionFailed = "connection_failed" // no answer arrived
	CodeStreamTruncated  = "stream_truncated"  // the stream ended or broke off before its final event
	CodeInvalidResponse  = "invalid_response"  // the answer does not follow the dialect
	CodeResponseTooLarge = "response_too_large"
)

// errCallTimeout is the cause of a call that ran past Limits.Timeout.
var errCallTimeout = fmt.Errorf("model: call exceeded its time bound: %w", context.DeadlineExceeded)

// transport posts one streaming request and reads its server-sent events
// within the limits. It never retries.
type transport struct {
	http      *http.Client
	base      string
	key       string
	limits    Limits
	propagate bool // send the trace context of ctx
	// final reads the body of a 429 for an answer that waiting does not
	// cure; nil reads it as the OpenAI dialects answer (neverFits).
	final func(raw []byte) bool
}

// encode answers the JSON of a request body. A body that cannot be
// encoded (a raw JSON value in it that is not JSON) is a request the
// dialect cannot carry.
func encode(dialect string, body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: encode request: %w", ErrInvalidRequest, dialect, err)
	}
	return b, nil
}

// send posts the encoded body to path with the given Accept header and
// answers the 2xx response; its body must be closed, then release called.
func (t transport) send(ctx context.Context, path string, header http.Header, payload []byte, accept string) (_ context.Context, _ *http.Response, _ func(), err error) {
	cancel := func() {}
	if t.limits.Timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, t.limits.Timeout, errCallTimeout)
	}
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+path, bytes.NewReader(payload))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("model: %s", t.redact(err.Error()))
	}
	// No GetBody: the transport cannot send the call again once its body
	// went out, as HTTP/2 would after a stream reset by the server (which
	// may have begun the call), or on any reused connection that broke.
	req.GetBody = nil
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if t.propagate {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, nil, nil, t.transportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, nil, nil, t.statusError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != accept {
		resp.Body.Close()
		return nil, nil, nil, &ProviderError{Code: CodeInvalidResponse, Message: fmt.Sprintf("status %d with Content-Type %q, want %s", resp.StatusCode, shown(t.redact(mt)), accept)}
	}
	return ctx, resp, cancel, nil
}

// stream posts the encoded body to path and hands every event to onEvent
// until it reports done. It answers whether onEvent reported done before
// the stream ended.
func (t transport) stream(ctx context.Context, path string, header http.Header, body []byte, onEvent func(event string, data []byte) (done bool, err error)) (bool, error) {
	ctx, resp, release, err := t.send(ctx, path, header, body, "text/event-stream")
	if err != nil {
		return false, err
	}
	defer release()
	defer resp.Body.Close()
	r := &sseReader{r: bufio.NewReaderSize(&boundedReader{r: resp.Body, max: t.limits.MaxStreamBytes}, 32<<10), maxFrame: t.limits.MaxFrameBytes}
	for {
		ev, data, err := r.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, t.readError(ctx, err)
		}
		done, err := onEvent(ev, data)
		var pe *ProviderError
		if err != nil && r.atEOF && errors.As(err, &pe) && pe.Code == CodeInvalidResponse {
			// The stream ended inside this event (no blank line closed
			// it) and what came of it cannot be read: the event was cut
			// short, as if it never came.
			return false, nil
		}
		if err != nil || done {
			return done, err
		}
	}
}

// post posts the encoded body to path and decodes its JSON answer, read
// within MaxStreamBytes, into out.
func (t transport) post(ctx context.Context, path string, header http.Header, body []byte, out any) error {
	ctx, resp, release, err := t.send(ctx, path, header, body, "application/json")
	if err != nil {
		return err
	}
	defer release()
	defer resp.Body.Close()
	raw, err := io.ReadAll(&boundedReader{r: resp.Body, max: t.limits.MaxStreamBytes})
	if err != nil {
		return t.readError(ctx, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &ProviderError{Code: CodeInvalidResponse, Message: "the answer is not the JSON object expected: " + err.Error()}
	}
	return nil
}

// transportError maps a failure to send or read: the context's cause when
// it ended, a bound, else a retryable connection failure.
func (t transport) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, errCallTimeout) {
			return cause // it names this package already
		}
		return fmt.Errorf("model: %w", cause)
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe
	}
	// Go's HTTP client advises its own callers on a request it did not
	// send again (see send); that advice is not the user's to follow.
	msg := strings.TrimSuffix(err.Error(), "; define Request.GetBody to avoid this error")
	return &ProviderError{Code: CodeConnectionFailed, Message: t.redact(msg), Retryable: true}
}

// readError maps a failure to read an answer that had begun: the
// context's cause when it ended, a bound, else the answer broke off (the
// connection reset or closed inside the body), which is a truncated
// stream, retryable as one that ends early is.
func (t transport) readError(ctx context.Context, err error) error {
	var pe *ProviderError
	if ctx.Err() != nil || errors.As(err, &pe) {
		return t.transportError(ctx, err)
	}
	return &ProviderError{Code: CodeStreamTruncated, Message: "the answer broke off: " + t.redact(err.Error()), Retryable: true}
}

// statusError maps a non-2xx answer. Both OpenAI ({"error":{"message",
// "type","code"}}) and Anthropic ({"type":"error","error":{"type",
// "message"}}) put the error in an "error" object.
func (t transport) statusError(resp *http.Response) error {
	limit := t.limits.MaxErrorBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	cut := int64(len(raw)) > limit
	if cut {
		raw = wholeRunes(raw[:limit])
	}
	code, msg := parseErrorBody(raw)
	if code == "" {
		code = "http_" + strconv.Itoa(resp.StatusCode)
	}
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
	}
	if loc, err := resp.Location(); err == nil && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// A redirect is not followed (see noRedirects): the base URL is
		// to be corrected.
		msg = fmt.Sprintf("redirected to %s, which is not followed: check the base URL", loc.Redacted())
		cut = false
	}
	message := t.redact(fmt.Sprintf("status %d: %s", resp.StatusCode, msg))
	if cut {
		// The bound may have cut an echoed key short: what is left of it
		// ends the text.
		message = t.redactCutKey(message)
	}
	final := t.final
	if final == nil {
		final = neverFits
	}
	pe := boundedFailure(t.code(code), message, len(message),
		retryableStatus(resp.StatusCode) && !(resp.StatusCode == http.StatusTooManyRequests && final(raw)))
	if pe.Retryable {
		pe.RetryAfter = retryAfter(resp.Header, time.Now())
	}
	return pe
}

// maxRetryAfter caps the wait a provider may ask for.
const maxRetryAfter = 24 * time.Hour

// retryAfter reads how long a provider asked to wait: OpenAI's
// retry-after-ms (milliseconds), else Retry-After in seconds or as an HTTP
// date. Anything unreadable, negative or past is zero; a wait longer than
// maxRetryAfter (a daily quota's, say) is maxRetryAfter.
func retryAfter(h http.Header, now time.Time) time.Duration {
	var d time.Duration
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		// A number too large to read (or infinite) is as long as the
		// longest wait, as a number of seconds is.
		if ms, err := strconv.ParseFloat(v, 64); (err == nil || errors.Is(err, strconv.ErrRange)) && ms > 0 {
			d = time.Duration(min(ms, float64(maxRetryAfter/time.Millisecond)) * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); d == 0 && v != "" {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil || (errors.Is(err, strconv.ErrRange) && secs > 0) {
			// A number too large to read is as long as the longest wait.
			if secs > 0 {
				d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
			}
		} else if at, err := http.ParseTime(v); err == nil {
			d = at.Sub(now)
		}
	}
	if d <= 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

// retryableStatus is the provider's verdict: rate limits, timeouts and
// server errors (Anthropic's 529 overloaded included) may succeed later;
// statusError also reads the body of a 429 for one that waiting does not
// cure (neverFits; anthropicNeverFits for the Messages API).
func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}

// quotaCodes are OpenAI's codes of a 429 that waiting does not cure: no
// credit left, or a spend or usage limit reached (error type
// insufficient_quota).
var quotaCodes = map[string]bool{
	"insufficient_quota": true, "credit_balance_exhausted": true, "organization_spend_limit_exceeded": true,
	"project_spend_limit_exceeded": true, "organization_usage_limit_exceeded": true,
}

// neverFits reports whether the body of a 429 says that a later attempt
// of the same request fails the same way: the account's quota or spend
// limit is used up, or the request alone asks for more tokens than the
// per-minute limit allows (OpenAI's "Request too large for ... on tokens
// per min", of code rate_limit_exceeded as a limit reached is).
func neverFits(raw []byte) bool {
	var body struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return false
	}
	var code string
	_ = json.Unmarshal(body.Error.Code, &code)
	return quotaCodes[body.Error.Type] || quotaCodes[code] ||
		strings.HasPrefix(strings.ToLower(strings.TrimSpace(body.Error.Message)), "request too large")
}

// parseErrorBody extracts the code and message of an error object.
func parseErrorBody(raw []byte) (code, message string) {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil || len(body.Error) == 0 {
		return "", ""
	}
	return parseErrorObject(body.Error)
}

func parseErrorObject(raw json.RawMessage) (code, message string) {
	var e struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "", s
		}
		return "", ""
	}
	var c string
	if json.Unmarshal(e.Code, &c) != nil || c == "" {
		c = e.Type
	}
	return c, e.Message
}

// streamError maps an error object reported inside a stream: the
// provider's code (stream_error when it gives none) and message, both
// redacted, retryable by its code (retryableCode) or by the HTTP status a
// numeric code stands for (local servers give one: vLLM and SGLang
// {"type":"InternalServerError","code":500}, llama.cpp
// {"code":503,"type":"unavailable_error"}), as a status answer is.
func (t transport) streamError(raw json.RawMessage) *ProviderError {
	code, msg := parseErrorObject(raw)
	code = orDefault(code, "stream_error")
	return t.failure(code, msg, retryableError(code, errorStatus(raw)))
}

// errorStatus answers the HTTP status that the numeric "code" of an error
// object stands for, 0 when its code is not one.
func errorStatus(raw json.RawMessage) int {
	var e struct {
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return 0
	}
	return statusCode(e.Code)
}

// statusCode answers the HTTP status a numeric error code stands for, 0
// when code is not one.
func statusCode(code json.RawMessage) int {
	status := 0
	if json.Unmarshal(code, &status) != nil || status < 100 || status > 599 {
		return 0
	}
	return status
}

// retryableError is the verdict for an error reported inside a stream:
// by its code, or by the HTTP status (non-zero) its numeric code stands
// for, as a status answer is (a 429 for an exhausted quota is final).
func retryableError(code string, status int) bool {
	if status == http.StatusTooManyRequests && quotaCodes[code] {
		return false
	}
	return retryableCode(code) || (status > 0 && retryableStatus(status))
}

// retryableCode is the verdict for an error reported inside a stream, where
// there is no status: overload, rate limits and server errors.
func retryableCode(code string) bool {
	switch code {
	case "overloaded_error", "api_error", "rate_limit_error", "rate_limit_exceeded", "too_many_requests",
		"server_error", "internal_error", "service_unavailable", "timeout_error":
		return true
	}
	return false
}

// boundedReader fails once more than max bytes were read (0: no bound).
type boundedReader struct {
	r        io.Reader
	max, n   int64
	exceeded bool
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.exceeded {
		return 0, b.err()
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.max > 0 && b.n > b.max {
		b.exceeded = true
		return 0, b.err()
	}
	return n, err
}

func (b *boundedReader) err() error {
	return &ProviderError{Code: CodeResponseTooLarge, Message: fmt.Sprintf("response stream exceeds %d bytes", b.max)}
}

// sseReader parses server-sent events: lines ended by CRLF, LF or a lone
// CR, "event:" and "data:" fields, data lines joined with "\n", comments
// ignored, a blank line dispatching, a byte order mark that begins the
// stream skipped. An event the stream's end interrupted is dispatched
// too, with atEOF set.
type sseReader struct {
	r        *bufio.Reader
	maxFrame int64
	// atEOF is set when the event last answered was closed by the end of
	// the stream rather than by a blank line: it may be cut short.
	atEOF bool
	// begun is set once the first line was read.
	begun bool
	// afterCR is set when the last line ended with a CR: an LF that
	// follows it (in the same read or the next) ends the same line.
	afterCR bool
}

func (s *sseReader) next() (event string, data []byte, err error) {
	var buf []byte
	size, hasData := int64(0), false
	for {
		line, err := s.line(&size)
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				s.atEOF = true
				return event, buf, nil
			}
			return "", nil, err
		}
		if len(line) == 0 {
			if hasData {
				return event, buf, nil
			}
			// Nothing to dispatch (a keep-alive comment, say): the next
			// event's bound starts afresh.
			event, size = "", 0
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "":
			// comment
		case "event":
			event = string(value)
		case "data":
			if hasData {
				buf = append(buf, '\n')
			}
			buf = append(buf, value...)
			hasData = true
		}
	}
}

// line reads one line without its terminator (CRLF, LF or CR), counting
// bytes toward the frame bound. The LF of a CRLF is looked for only when
// the next line is asked for, so that a line ended by a CR is answered
// without waiting for what follows it. A last line the stream's end
// closed is answered too; the stream's end then answers io.EOF.
func (s *sseReader) line(size *int64) ([]byte, error) {
	var out []byte
	for {
		if _, err := s.r.Peek(1); err != nil {
			if errors.Is(err, io.EOF) && len(out) > 0 {
				return s.ended(out), nil
			}
			return nil, err
		}
		chunk, _ := s.r.Peek(s.r.Buffered())
		if s.afterCR {
			s.afterCR = false
			if chunk[0] == '\n' {
				*size++
				_, _ = s.r.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(chunk, "\r\n")
		if i >= 0 {
			chunk = chunk[:i+1]
		}
		*size += int64(len(chunk))
		if s.maxFrame > 0 && *size > s.maxFrame {
			return nil, &ProviderError{Code: CodeResponseTooLarge, Message: fmt.Sprintf("a stream event exceeds %d bytes", s.maxFrame)}
		}
		if i < 0 {
			out = append(out, chunk...)
			_, _ = s.r.Discard(len(chunk))
			continue
		}
		out = append(out, chunk[:i]...)
		s.afterCR = chunk[i] == '\r'
		_, _ = s.r.Discard(len(chunk))
		return s.ended(out), nil
	}
}

// ended answers a whole line as the stream means it: the stream may begin
// with a UTF-8 byte order mark, which is not part of its first field's
// name.
func (s *sseReader) ended(line []byte) []byte {
	if !s.begun {
		s.begun = true
		line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	}
	return line
}

// output accumulates a response within MaxOutputBytes and forwards live
// deltas of at most MaxDeltaBytes.
type output struct {
	max, used int64
	maxDelta  int64
	onDelta   func(Delta)
}

func newOutput(l Limits, onDelta func(Delta)) *output {
	return &output{max: l.MaxOutputBytes, maxDelta: l.MaxDeltaBytes, onDelta: onDelta}
}

// charge counts n bytes of output.
func (o *output) charge(n int) error {
	o.used += int64(n)
	if o.max > 0 && o.used > o.max {
		return &ProviderError{Code: CodeResponseTooLarge, Message: fmt.Sprintf("model output exceeds %d bytes", o.max)}
	}
	return nil
}

// text counts a text fragment and forwards it as deltas.
func (o *output) text(s string) error {
	if err := o.charge(len(s)); err != nil {
		return err
	}
	if o.onDelta == nil {
		return nil
	}
	for len(s) > 0 {
		k := len(s)
		if o.maxDelta > 0 && int64(k) > o.maxDelta {
			k = int(o.maxDelta)
			for k > 0 && !utf8.RuneStart(s[k]) {
				k--
			}
			if k == 0 {
				k = int(o.maxDelta)
			}
		}
		o.onDelta(Delta{Text: s[:k]})
		s = s[k:]
	}
	return nil
}

// invalid is a malformed stream event.
func invalid(dialect, what string, err error) error {
	msg := what
	if err != nil {
		msg += ": " + err.Error()
	}
	return &ProviderError{Code: CodeInvalidResponse, Message: dialect + ": " + msg}
}

// toolInput checks that a tool call's arguments are a JSON object and
// answers them compacted; empty arguments are {}.
func toolInput(name, args string) (json.RawMessage, error) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		return nil, invalidToolInput(name, err)
	}
	if obj == nil {
		return nil, invalidToolInput(name, errors.New("null"))
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(args)); err != nil {
		return nil, invalidToolInput(name, err)
	}
	return b.Bytes(), nil
}

func i64(v int64) *int64 { return &v }

// wholeRunes answers b, cut at a bound, without the character the bound
// ended inside: a message quoted from it holds whole characters only.
func wholeRunes(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
