package envtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Kind says which endpoint a call arrived at.
type Kind string

// Call kinds.
const (
	KindExecution Kind = "execution" // an execution callback
	KindReporter  Kind = "reporter"  // a binding's reporter
	KindContext   Kind = "context"   // an operation's controller context
	KindUnknown   Kind = "unknown"   // no route matched
)

// MethodReporter is the method name under which reporter posts are
// recorded and faults on them are injected.
const MethodReporter = "reporter"

type grant struct {
	kind     Kind
	session  string
	env      string
	sequence uint64
	methods  []string
	revoked  bool
	// closed: the reporter's binding was detached or torn down; its
	// token is still Brain's, but the binding takes no report.
	closed  bool
	expires time.Time // zero: never
}

func newToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Errorf("envtest: random token: %w", err))
	}
	return hex.EncodeToString(b[:])
}

func (b *Brain) add(g *grant, path string) envapi.Grant {
	token := newToken()
	b.mu.Lock()
	b.grants[token] = g
	b.mu.Unlock()
	return envapi.Grant{URL: b.URL + path, Token: token, Methods: slices.Clone(g.methods)}
}

// ToolGrant grants a Tool execution (session, seq) the Tool methods under a
// fresh token.
func (b *Brain) ToolGrant(session string, seq uint64) envapi.Grant {
	return b.ExecutionGrant(session, seq, envapi.ToolMethods()...)
}

// AgentloopGrant grants an Agentloop execution the Agentloop methods.
func (b *Brain) AgentloopGrant(session string, seq uint64) envapi.Grant {
	return b.ExecutionGrant(session, seq, envapi.AgentloopMethods()...)
}

// ExecutionGrant grants execution (session, seq) exactly methods under a
// fresh token.
func (b *Brain) ExecutionGrant(session string, seq uint64, methods ...string) envapi.Grant {
	path := fmt.Sprintf("/v1/sessions/%s/executions/%d/call", url.PathEscape(session), seq)
	return b.add(&grant{kind: KindExecution, session: session, sequence: seq, methods: methods}, path)
}

// ReporterGrant grants the reporter of binding (env, bseq) in session.
func (b *Brain) ReporterGrant(session, env string, bseq uint64) envapi.Grant {
	path := fmt.Sprintf("/v1/sessions/%s/environments/%s/%d/events", url.PathEscape(session), url.PathEscape(env), bseq)
	return b.add(&grant{kind: KindReporter, session: session, env: env, sequence: bseq, methods: []string{"event", "result"}}, path)
}

// ContextGrant grants operation seq on env its controller context:
// environments, emit and result.
func (b *Brain) ContextGrant(session, env string, seq uint64) envapi.Grant {
	path := fmt.Sprintf("/v1/sessions/%s/environments/%s/operations/%d/context", url.PathEscape(session), url.PathEscape(env), seq)
	return b.add(&grant{kind: KindContext, session: session, env: env, sequence: seq, methods: envapi.ContextMethods()}, path)
}

// Revoke makes every later call with token fail with 401, as completion or
// cancellation does.
func (b *Brain) Revoke(token string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if g, ok := b.grants[token]; ok {
		g.revoked = true
	}
}

// Expire makes token invalid from at on, as the original deadline of an
// execution does.
func (b *Brain) Expire(token string, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if g, ok := b.grants[token]; ok {
		g.expires = at
	}
}

// Revoked reports whether token was revoked (by Revoke or by finish).
func (b *Brain) Revoked(token string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	g, ok := b.grants[token]
	return ok && g.revoked
}

func bearer(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return tok
}

// authorize finds the grant of the request's token and checks that it names
// this endpoint. It holds b.mu.
func (b *Brain) authorizeLocked(token string, kind Kind, session, env string, seq uint64, now time.Time) (*grant, string) {
	if token == "" {
		return nil, "missing bearer token"
	}
	g, ok := b.grants[token]
	switch {
	case !ok:
		return nil, "unknown token"
	case g.revoked:
		return nil, "token revoked"
	case !g.expires.IsZero() && !now.Before(g.expires):
		return nil, "token expired"
	case g.kind != kind || g.session != session || g.sequence != seq || (kind != KindExecution && g.env != env):
		return nil, "token does not belong to this endpoint"
	}
	return g, ""
}
