package envbind

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Binder delivers environment operations over HTTP (it is the engine's
// session.Environments) and authorizes the invocation and reporter tokens
// it hands out; the routes that present them are served by httpapi.
// Create it with New and Close it after the engine.
type Binder struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	grants *grants

	public atomic.Pointer[string] // base of callback and reporter URLs

	// keyMu guards key, read or created once it can be: a failure to
	// read it is not kept, so that a later operation tries again.
	keyMu sync.Mutex
	key   []byte

	stop     chan struct{}
	stopOnce sync.Once
	watchers sync.WaitGroup
}

var (
	_ session.Environments = (*Binder)(nil)
	_ session.Validator    = (*Binder)(nil)
)

// New returns a Binder for cfg. It touches no file: the reporter key is
// read or created by the first operation or token check that needs it.
func New(cfg Config) (*Binder, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(c.Key) != 0 && len(c.Key) != keySize {
		return nil, fmt.Errorf("envbind: Key must be %d bytes", keySize)
	}
	if len(c.Key) == 0 && c.KeyFile == "" {
		return nil, errors.New("envbind: Config.Key or Config.KeyFile is required")
	}
	dialer := &net.Dialer{Timeout: c.ConnectTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   c.ConnectTimeout,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 0, // bounded by the operation's context
		ForceAttemptHTTP2:     true,
	}
	b := &Binder{
		cfg:    c,
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		log:    c.Logger,
		grants: newGrants(),
		stop:   make(chan struct{}),
	}
	b.public.Store(&c.PublicURL)
	if len(c.Key) != 0 {
		b.key = append([]byte(nil), c.Key...)
	}
	return b, nil
}

// SetPublicURL sets the base of the callback and reporter URLs handed to
// providers from now on.
func (b *Binder) SetPublicURL(u string) error {
	pub, err := checkPublicURL(u)
	if err != nil {
		return err
	}
	b.public.Store(&pub)
	return nil
}

// PublicURL answers the base of callback and reporter URLs ("" while
// unknown).
func (b *Binder) PublicURL() string { return *b.public.Load() }

// serverKey answers the reporter key, loading or creating it the first
// time it can be. A failure (the key file could not be read or written
// then) is answered, not kept: the next call tries again.
func (b *Binder) serverKey() ([]byte, error) {
	b.keyMu.Lock()
	defer b.keyMu.Unlock()
	if b.key != nil {
		return b.key, nil
	}
	key, err := loadKey(b.cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	b.key = key
	return key, nil
}

// Close revokes every invocation token and releases idle connections.
// Call it after the engine is closed.
func (b *Binder) Close() error {
	b.stopOnce.Do(func() { close(b.stop) })
	b.watchers.Wait()
	b.client.CloseIdleConnections()
	return nil
}

// MaxResponseBytes answers the bound on a provider's answer
// (Config.MaxResponseBytes, its default filled in): the largest execute
// answer Brain takes, and so the largest outcome a Tool may post through
// its callback's result, returned or finish.
func (b *Binder) MaxResponseBytes() int64 { return b.cfg.MaxResponseBytes }

// LiveGrants reports how many invocation tokens are live.
func (b *Binder) LiveGrants() int { return b.grants.len() }

// Deliver sends one operation once, whatever its request type, and
// decodes its receipt. A callback or context grant gets a freshly minted
// invocation token, revoked when the engine closes the execution or the
// controller context (op.CallbackDone, op.ContextDone).
func (b *Binder) Deliver(ctx context.Context, op session.Operation) (envapi.Receipt, error) {
	return b.deliver(ctx, op)
}

// ValidateEnvironment checks at session create that a declaration can be
// delivered: an http driver needs a valid url; any other driver needs a
// route or the default route.
func (b *Binder) ValidateEnvironment(env api.Environment) error {
	_, _, err := b.target(env, "")
	return err
}

// target resolves where an environment's operations go and with which
// credential.
func (b *Binder) target(env api.Environment, sessionCredential string) (endpoint, credential string, err error) {
	if env.Driver == api.DriverHTTP {
		if err := checkSessionURL(env.URL); err != nil {
			return "", "", err
		}
		// A session URL gets the session's credential, never Brain's.
		return env.URL, sessionCredential, nil
	}
	if env.URL != "" {
		return "", "", fmt.Errorf("driver %q takes no url (only driver %q does)", env.Driver, api.DriverHTTP)
	}
	names := []string{env.Driver}
	var conf struct {
		Driver string `json:"driver"`
	}
	if len(env.Configuration) > 0 && json.Unmarshal(env.Configuration, &conf) == nil && conf.Driver != "" {
		names = append(names, conf.Driver)
	}
	for _, n := range names {
		if r, ok := b.cfg.Routes[n]; ok && n != "" {
			return r.Endpoint, firstNonEmpty(r.APIKey, sessionCredential), nil
		}
	}
	if b.cfg.BaseURL != "" && env.Driver != api.DriverHost {
		return b.cfg.BaseURL, firstNonEmpty(b.cfg.APIKey, sessionCredential), nil
	}
	name := env.Driver
	if conf.Driver != "" {
		name = conf.Driver
	}
	return "", "", fmt.Errorf("no route for driver %q (declare driver %q with a url, or configure a route or a default endpoint)", name, api.DriverHTTP)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// route answers where op goes and with which credential. They come from
// the declaration as authorised, never from a configuration given later.
func (b *Binder) route(op session.Operation) (endpoint, credential string, err error) {
	decl := op.Authorized
	if decl.Name == "" && decl.Driver == "" {
		decl = op.Declaration
	}
	return b.target(decl, op.Credential)
}

// RedactReport answers raw, the data or output of a report made with
// reporter token of the binding op names (see session.Report.Redact),
// with the binding's secrets removed from its strings: the token, the
// credential op's operations are sent with (a route's api_key, the
// default route's key or the session's credential) and the session's
// credential of the environment. A reporter outlives the operations of
// its binding, so its report is redacted from what the binding's
// operations would carry, not from a live grant only. The reporter
// tokens of the session's other current bindings (op.Bindings), the
// credentials the operations of its other environments carry
// (op.Targets), and the credential and tokens of the session's operations
// whose tokens are still live (an execute the provider is running, its
// controller context), are removed too.
func (b *Binder) RedactReport(op session.Operation, raw json.RawMessage, token string) json.RawMessage {
	_, credential, _ := b.route(op)
	hide := append(redactor{token, credential, op.Credential}, b.targetCredentials(op)...)
	// The key was read to authorize the report.
	if key, err := b.serverKey(); err == nil {
		hide = append(hide, bindingTokens(key, op)...)
	}
	return append(hide, b.grants.session(op.SessionID)...).json(raw)
}

// bindingTokens answers the reporter tokens of the session's current
// bindings (op.Bindings).
func bindingTokens(key []byte, op session.Operation) redactor {
	out := make(redactor, 0, len(op.Bindings))
	for _, ref := range op.Bindings {
		out = append(out, reporterToken(key, op.SessionID, ref.Name, ref.Sequence))
	}
	return out
}

// targetCredentials answers the credentials the operations of the
// session's declared environments carry (op.Targets): for each, the
// credential its route sends (a route's api_key, the default route's
// key) and the session's credential of the environment.
func (b *Binder) targetCredentials(op session.Operation) redactor {
	var out redactor
	add := func(v string) {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, t := range op.Targets {
		add(t.Credential)
		// A session URL is sent the session's credential only.
		if t.Authorized.Driver != api.DriverHTTP {
			if _, credential, err := b.target(t.Authorized, t.Credential); err == nil {
				add(credential)
			}
		}
	}
	return out
}

// deliver sends one operation once and decodes its receipt.
func (b *Binder) deliver(ctx context.Context, op session.Operation) (envapi.Receipt, error) {
	endpoint, credential, err := b.route(op)
	if err != nil {
		return notSent(CodeNoRoute, fmt.Sprintf("environment %s: %v", op.Environment, err), false), nil
	}
	wire := op.Operation
	public := b.PublicURL()
	if public == "" && (wire.Request.Callback != nil || wire.Context != nil || wire.Binding != nil) {
		return notSent(CodeNotSent, fmt.Sprintf("environment %s: operation %d: Brain's public URL is not known yet", op.Environment, op.Sequence), true), nil
	}
	callURL := public + "/v1/sessions/" + url.PathEscape(op.SessionID) + "/executions/" + strconv.FormatUint(op.Sequence, 10) + "/call"
	var key []byte
	var epoch int64
	if wire.Request.Callback != nil || wire.Context != nil {
		if key, err = b.serverKey(); err != nil {
			return b.keyUnreadable(op, err), nil
		}
		if b.cfg.Epoch != nil {
			epoch, _ = b.cfg.Epoch(op.SessionID)
		}
	}
	if cb := wire.Request.Callback; cb != nil {
		g := *cb
		k := grantKey{op.SessionID, op.Sequence, false}
		g.URL = callURL
		g.Token = b.grants.mint(k, key, epoch)
		wire.Request.Callback = &g
		b.watch(k, op.CallbackDone)
	}
	if cg := wire.Context; cg != nil {
		g := *cg
		k := grantKey{op.SessionID, op.Sequence, true}
		g.URL = callURL
		g.Token = b.grants.mint(k, key, epoch)
		wire.Context = &g
		b.watch(k, op.ContextDone)
	}
	if wire.Binding != nil {
		key, err := b.serverKey()
		if err != nil {
			return b.keyUnreadable(op, err), nil
		}
		wire.Reporter = &envapi.Grant{
			URL: public + "/v1/sessions/" + url.PathEscape(op.SessionID) + "/environments/" +
				url.PathEscape(wire.Binding.Name) + "/" + strconv.FormatUint(wire.Binding.Sequence, 10) + "/events",
			Token:   reporterToken(key, op.SessionID, wire.Binding.Name, wire.Binding.Sequence),
			Methods: []string{"event", "result"},
		}
	}
	if len(wire.Configuration) > 0 && string(wire.Configuration) == "null" {
		wire.Configuration = nil
	}
	body, err := json.Marshal(envapi.Command{Contract: envapi.Contract, Operation: wire})
	if err != nil {
		return notSent(CodeNotSent, fmt.Sprintf("environment %s: operation %d cannot be encoded: %v", op.Environment, op.Sequence, err), false), nil
	}
	// What the provider answers is journaled: the credential and the
	// tokens it was sent never come back through it.
	hide := append(redactor{credential}, wire.Tokens()...)
	// Nor the credentials of the session's other environments: a
	// provider that serves several was sent each.
	hide = append(hide, b.targetCredentials(op)...)
	// Nor the reporter tokens of the session's other bindings: a provider
	// that serves several was sent each.
	if len(op.Bindings) > 0 {
		key, err := b.serverKey()
		if err != nil {
			return b.keyUnreadable(op, err), nil
		}
		hide = append(hide, bindingTokens(key, op)...)
	}
	// Nor through what it sends with the operation's grants.
	if wire.Request.Callback != nil {
		b.grants.hide(grantKey{op.SessionID, op.Sequence, false}, hide)
	}
	if wire.Context != nil {
		b.grants.hide(grantKey{op.SessionID, op.Sequence, true}, hide)
	}
	ctx, end := b.traceOperation(ctx, op)
	if !isTurn(op) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.cfg.ResponseTimeout)
		defer cancel()
	}
	receipt, err := b.post(ctx, endpoint, credential, op, body, hide)
	// Nor through the tokens of the session's other operations under
	// way when it answered (see post).
	hide = hide.with(b.grants.session(op.SessionID))
	receipt, err = hide.receipt(receipt), hide.error(err)
	end(receipt, err)
	return receipt, err
}

// post sends the command and reads the response. hide holds the secrets
// the command carried: an answer that quotes one where it cannot be
// redacted is not decoded into an error that quotes it in turn.
func (b *Binder) post(ctx context.Context, endpoint, credential string, op session.Operation, body []byte, hide redactor) (envapi.Receipt, error) {
	target := endpoint
	if len(target) > 0 && target[len(target)-1] == '/' {
		target = target[:len(target)-1]
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target+"/v1/operations", bytes.NewReader(body))
	if err != nil {
		return notSent(CodeNoRoute, fmt.Sprintf("environment %s: operation %d: the endpoint cannot be used", op.Environment, op.Sequence), false), nil
	}
	// No GetBody: the transport can never resend the operation, not even
	// when a reused connection turns out to be closed.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if credential != "" {
		req.Header.Set("Authorization", "Bearer "+credential)
	}
	b.injectTrace(ctx, req.Header)
	resp, err := b.client.Do(req)
	if err != nil {
		return envapi.Receipt{}, fmt.Errorf("environment %s: operation %d: %w", op.Environment, op.Sequence, scrub(err))
	}
	defer resp.Body.Close()
	b.traceStatus(ctx, resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		// Whatever its body, a status other than 200 is no answer to the
		// operation: it is a delivery error, never an invalid receipt. The
		// body is read only for an error code, within the bound.
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, min(b.cfg.MaxResponseBytes, maxErrorBody)))
		var apiErr struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(raw, &apiErr)
		msg := fmt.Sprintf("environment %s: operation %d: provider answered HTTP %d", op.Environment, op.Sequence, resp.StatusCode)
		if envapi.ValidIdentifier(apiErr.Code) {
			msg += " (" + apiErr.Code + ")"
		}
		return envapi.Receipt{}, errors.New(msg)
	}
	// One byte past the bound tells a larger answer apart; the largest
	// bound has no byte past it.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, min(b.cfg.MaxResponseBytes, math.MaxInt64-1)+1))
	if err != nil {
		return envapi.Receipt{}, fmt.Errorf("environment %s: operation %d: reading the response: %w", op.Environment, op.Sequence, scrub(err))
	}
	// Nor the tokens of the session's other operations under way when it
	// answered: a provider that runs several was sent each.
	hide = hide.with(b.grants.session(op.SessionID))
	if int64(len(raw)) > b.cfg.MaxResponseBytes {
		return envapi.Receipt{}, fmt.Errorf("environment %s: operation %d: response larger than %d bytes: %w",
			op.Environment, op.Sequence, b.cfg.MaxResponseBytes, session.ErrInvalidReceipt)
	}
	res, err := envapi.DecodeResponse(raw)
	if err != nil {
		if hide.mayQuote(raw) {
			// The decoder's error may quote the secret escaped or cut
			// short, where redaction cannot find it.
			return envapi.Receipt{}, fmt.Errorf("environment %s: operation %d: malformed response (which quotes a credential or token the operation carried, so it is not described): %w",
				op.Environment, op.Sequence, session.ErrInvalidReceipt)
		}
		return envapi.Receipt{}, fmt.Errorf("environment %s: operation %d: %v: %w", op.Environment, op.Sequence, err, session.ErrInvalidReceipt)
	}
	if err := envapi.CheckResponse(op.Operation, res, hide.forms()...); err != nil {
		return envapi.Receipt{}, fmt.Errorf("environment %s: operation %d: %v: %w", op.Environment, op.Sequence, err, session.ErrInvalidReceipt)
	}
	return res.Receipt, nil
}

// maxErrorBody bounds what is read of an answer whose status is not 200.
const maxErrorBody = 64 << 10

// isTurn reports whether op is a remote agentloop's execute: its turn,
// which the turn's own deadline and cancellation bound (the engine's
// context), not Config.ResponseTimeout. A tool's execute names its tool.
func isTurn(op session.Operation) bool {
	return op.Request.Type == envapi.RequestExecute && op.Tool == ""
}

// scrub drops the URL from a transport error (it is the provider's
// endpoint; keeping errors free of URLs keeps them free of anything an
// operator may have put in one).
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// watch revokes an invocation token when done is closed (the engine
// closed the execution or context) or the Binder closes. Without done the
// token lives until the Binder closes or a call finds its execution gone.
func (b *Binder) watch(k grantKey, done <-chan struct{}) {
	if done == nil {
		return
	}
	b.watchers.Add(1)
	go func() {
		defer b.watchers.Done()
		select {
		case <-done:
		case <-b.stop:
		}
		b.grants.revoke(k)
	}()
}
