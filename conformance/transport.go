package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// raw sends body to path with token (none when empty) and never fails the
// case.
func (p *probe) raw(path, token string, body []byte) *exchange {
	auth := ""
	if token != "" {
		auth = "Bearer " + token
	}
	return p.rawHeader(path, auth, body)
}

// wrongToken is a token no provider should accept.
func (p *probe) wrongToken() string { return p.tg.Token + "-not-the-token" }

// setupBody is a valid setup command of a fresh binding.
func (p *probe) setupBody() []byte {
	data, _ := json.Marshal(p.binding().Setup(p.tg.SetupConfiguration))
	return data
}

func (p *probe) wantStatus(r rule, ex *exchange, want int, what string) bool {
	p.t.Helper()
	if ex.Status != want {
		if ex.Status == 0 && ex.Err != nil {
			// No status came back at all: say so, and why.
			p.fail(r, ex, "%s: want %d, %v", what, want, valid(ex))
			return false
		}
		p.fail(r, ex, "%s: answered %d, want %d", what, ex.Status, want)
		return false
	}
	return true
}

func authMissingToken(p *probe) {
	if p.tg.Token == "" {
		p.fatal(ruleAuth, nil, "the target has no token: a provider must authenticate requests")
	}
	c := p.binding()
	setup := c.Setup(p.tg.SetupConfiguration)
	body, _ := json.Marshal(setup)
	ex := p.raw("/v1/operations", "", body)
	if !p.wantStatus(ruleAuth, ex, http.StatusUnauthorized, "a command without Authorization") {
		return
	}
	p.refusedWithoutEffect(c, setup, "an unauthenticated setup")
}

// refusedWithoutEffect checks that the refused setup of c had no effect:
// the same setup with the token is the binding's first, so it is accepted
// (unless the provider accepts a second setup anyway).
func (p *probe) refusedWithoutEffect(c *envtest.Commands, setup envapi.Command, what string) {
	p.t.Helper()
	if p.tg.DuplicateSetup == DuplicateAccepted {
		return
	}
	ex := p.must(ruleAuth, setup)
	if got := ex.receipt(); got.Type != envapi.ReceiptAccepted {
		p.fail(ruleAuth, ex, "after %s was refused 401, the authenticated setup answered %q %s, want accepted: the refused one had been served", what, got.Type, got.Code)
	}
	p.teardownLater(c)
}

func authWrongToken(p *probe) {
	// Every refused command is the setup of one binding: none of them may
	// have set it up.
	c := p.binding()
	setup := c.Setup(p.tg.SetupConfiguration)
	body, _ := json.Marshal(setup)
	ex := p.raw("/v1/operations", p.wrongToken(), body)
	p.wantStatus(ruleAuth, ex, http.StatusUnauthorized, "a command with a wrong bearer token")
	ex = p.raw("/v1/conformance-no-such-route", p.wrongToken(), body)
	p.wantStatus(ruleAuth, ex, http.StatusUnauthorized, "a wrong token on an unknown path (authentication comes before routing)")
	ex = p.rawHeader("/v1/operations", "Basic "+p.tg.Token, body)
	p.wantStatus(ruleAuth, ex, http.StatusUnauthorized, "the token under another scheme than Bearer")
	if tok := p.tg.Token; len(tok) >= 2 {
		// A provider that compares only as much as it was sent, or only
		// the length, lets these through.
		ex = p.rawHeader("/v1/operations", "Bearer "+tok[:len(tok)-1], body)
		p.wantStatus(ruleAuth, ex, http.StatusUnauthorized, "the token without its last character")
		last := byte('a')
		if tok[len(tok)-1] == 'a' {
			last = 'b'
		}
		ex = p.rawHeader("/v1/operations", "Bearer "+tok[:len(tok)-1]+string(last), body)
		p.wantStatus(ruleAuth, ex, http.StatusUnauthorized, "a token of the same length that differs in its last character")
	}
	p.refusedWithoutEffect(c, setup, "a setup with a wrong token")
}

// rawHeader sends body to path with an Authorization header (none when
// empty) and never fails the case.
func (p *probe) rawHeader(path, authorization string, body []byte) *exchange {
	ex := &exchange{Request: body, Sent: time.Now()}
	if path != "/v1/operations" {
		ex.Request = append([]byte("(to "+path+") "), body...)
	}
	req, err := http.NewRequestWithContext(p.ctx, http.MethodPost, strings.TrimSuffix(p.tg.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		ex.Err = fmt.Errorf("build request: %w", err)
		return ex
	}
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := p.tg.Client.Do(req)
	ex.Answered = time.Now()
	if err != nil {
		ex.Err = err
		return ex
	}
	defer res.Body.Close()
	ex.Status = res.StatusCode
	ex.Body, ex.Err = io.ReadAll(io.LimitReader(res.Body, 1<<20))
	ex.Answered = time.Now()
	return ex
}

func transportNotFound(p *probe) {
	ex := p.raw("/v1/conformance-no-such-route", p.tg.Token, p.setupBody())
	p.wantStatus(ruleRoute, ex, http.StatusNotFound, "an authenticated POST to an unknown path")
}

func transportBodyTooLarge(p *probe) {
	limit := p.o.MaxBodyBytes
	p.bodyAtLimit(limit)
	c := p.binding()
	body := oversizedSetup(c, limit+1)
	// A server may answer 413 and close while the body is still being
	// written; the client then sees a reset instead of the answer. Retry a
	// few times before calling that a failure.
	var ex *exchange
	for range 3 {
		ex = p.raw("/v1/operations", p.tg.Token, body)
		if ex.Err == nil || ex.Status != 0 {
			break
		}
	}
	ex.Request = append(append([]byte{}, body[:min(len(body), 200)]...), []byte("…")...)
	if ex.Status == http.StatusOK {
		p.teardownLater(c)
	}
	p.wantStatus(ruleBodyLimit, ex, http.StatusRequestEntityTooLarge, fmt.Sprintf("a body of %d bytes (limit %d)", len(body), limit))
}

// oversizedSetup is a setup of c of at least size bytes that is wrong in
// nothing but its size: the padding is a string configuration, which the
// envelope carries without interpreting it, so a provider that validates
// while it reads finds nothing to refuse before the body passes its limit.
func oversizedSetup(c *envtest.Commands, size int64) []byte {
	const empty = `"configuration":""`
	cmd := c.Setup(json.RawMessage(`""`))
	base, _ := json.Marshal(cmd)
	places := int64(max(bytes.Count(base, []byte(empty)), 1))
	pad := max((size-int64(len(base))+places-1)/places, 0)
	config := make([]byte, 0, pad+2)
	config = append(config, '"')
	config = append(config, bytes.Repeat([]byte("x"), int(pad))...)
	config = append(config, '"')
	cmd.Operation.Request.Configuration = config
	if cmd.Operation.Configuration != nil {
		cmd.Operation.Configuration = config
	}
	body, _ := json.Marshal(cmd)
	return body
}

// bodyAtLimit sends a setup of a fresh binding padded with whitespace to
// exactly limit bytes: a command within the limit is served, not refused.
func (p *probe) bodyAtLimit(limit int64) {
	p.t.Helper()
	c := p.binding()
	setup, _ := json.Marshal(c.Setup(p.tg.SetupConfiguration))
	pad := int(limit) - len(setup)
	if pad < 0 {
		return // the declared limit is smaller than any setup command
	}
	body := make([]byte, 0, limit)
	body = append(body, setup[0])
	body = append(body, bytes.Repeat([]byte(" "), pad)...)
	body = append(body, setup[1:]...)
	ex := p.raw("/v1/operations", p.tg.Token, body)
	ex.Request = append(append(append([]byte{}, setup[:1]...), fmt.Sprintf("<%d spaces>", pad)...), setup[1:]...)
	if ex.Status == http.StatusRequestEntityTooLarge {
		p.fail(ruleBodyLimit, ex, "a setup of exactly %d bytes, the declared limit, answered 413: the provider's limit is lower than the declared one (Options.MaxBodyBytes, profile \"max_body_bytes\"), or it refuses a body that is exactly at its limit", limit)
		return
	}
	p.teardownLater(c)
	p.wantStatus(ruleBodyLimit, ex, http.StatusOK, fmt.Sprintf("a setup of exactly %d bytes, the declared limit", limit))
}

func transportMalformed(p *probe) {
	ex := p.raw("/v1/operations", p.tg.Token, []byte(`{"contract":"environment/v1","operation":`))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "truncated JSON")
	// A reader that stops after the first value (a json.Decoder's Decode)
	// serves this setup and never sees the rest.
	body := append(p.setupBody(), []byte(` {"contract":"environment/v1"}`)...)
	ex = p.raw("/v1/operations", p.tg.Token, body)
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "a setup followed by a second JSON value")
}

// mutated is a valid setup command with f applied to its operation.
func (p *probe) mutated(f func(op map[string]any)) []byte {
	var doc map[string]any
	_ = json.Unmarshal(p.setupBody(), &doc)
	f(doc["operation"].(map[string]any))
	data, _ := json.Marshal(doc)
	return data
}

func transportUnknownField(p *probe) {
	ex := p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) { op["conformance_unknown_field"] = true }))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "an unknown field in operation")
	ex = p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) {
		op["request"].(map[string]any)["conformance_unknown_field"] = 1
	}))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "an unknown field in a setup request")
	// Member names are case-sensitive: "Sequence" is not "sequence",
	// though encoding/json matches it to the same field.
	ex = p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) {
		op["Sequence"] = op["sequence"]
		delete(op, "sequence")
	}))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, `"Sequence" in place of "sequence" (names are case-sensitive)`)
	ex = p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) {
		req := op["request"].(map[string]any)
		req["Configuration"] = req["configuration"]
		delete(req, "configuration")
	}))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, `"Configuration" in place of "configuration" in a setup request (names are case-sensitive)`)
}

// transportDuplicateKey sends a setup whose operation names its
// environment twice: readers that keep the first and the last member would
// serve different bindings, so the command is refused.
func transportDuplicateKey(p *probe) {
	body := p.setupBody()
	shadowed := bytes.Replace(body, []byte(`"operation":{`), []byte(`"operation":{"environment":"conformance-shadow",`), 1)
	ex := p.raw("/v1/operations", p.tg.Token, shadowed)
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, `an operation with "environment" twice`)
}

// transportWrongContract sends setups of another contract and of none.
func transportWrongContract(p *probe) {
	var doc map[string]json.RawMessage
	_ = json.Unmarshal(p.setupBody(), &doc)
	doc["contract"] = json.RawMessage(`"environment/v2"`)
	body, _ := json.Marshal(doc)
	ex := p.raw("/v1/operations", p.tg.Token, body)
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, `a setup of contract "environment/v2"`)
	_ = json.Unmarshal(p.setupBody(), &doc)
	delete(doc, "contract")
	body, _ = json.Marshal(doc)
	ex = p.raw("/v1/operations", p.tg.Token, body)
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "a setup without contract")
}

func transportBadIdentifier(p *probe) {
	ex := p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) { op["session_id"] = "not an identifier!" }))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "session_id that is not an identifier")
	ex = p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) { op["environment"] = "-leading-dash" }))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "environment that is not an identifier")
	ex = p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) {
		op["request"] = map[string]any{"type": "call", "name": "not a method name!", "input": map[string]any{}}
	}))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "a call whose name is not an identifier")
}

func transportZeroSequence(p *probe) {
	ex := p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) { op["sequence"] = 0 }))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "sequence 0")
	ex = p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) { op["sequence"] = -3 }))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "a negative sequence")
	ex = p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) { op["sequence"] = 1.5 }))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "a sequence that is not an integer (1.5)")
	ex = p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) {
		op["request"] = map[string]any{"type": "cancel", "target_sequence": 0}
	}))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, "a cancel of target_sequence 0")
}

// transportMissingField sends setups that leave out a field every
// command carries: a provider that takes the zero value in its place
// serves an operation Brain never sent.
func transportMissingField(p *probe) {
	for _, field := range []string{"session_id", "environment", "sequence", "request"} {
		ex := p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) { delete(op, field) }))
		p.wantStatus(ruleStrict, ex, http.StatusBadRequest, fmt.Sprintf("an operation without %q", field))
	}
	ex := p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) {
		op["request"] = map[string]any{"type": "cancel"}
	}))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, `a cancel without "target_sequence"`)
	ex = p.raw("/v1/operations", p.tg.Token, p.mutated(func(op map[string]any) {
		op["request"] = map[string]any{"type": "call", "input": map[string]any{}}
	}))
	p.wantStatus(ruleStrict, ex, http.StatusBadRequest, `a call without "name"`)
}
