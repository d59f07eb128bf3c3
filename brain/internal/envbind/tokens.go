package envbind

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
)

// reporterToken derives the reporter token of a binding.
func reporterToken(key []byte, session, env string, binding uint64) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("brain reporter v1\x00"))
	m.Write([]byte(session))
	m.Write([]byte{0})
	m.Write([]byte(env))
	m.Write([]byte{0})
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], binding)
	m.Write(n[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// equalTokens compares two tokens in constant time (over their digests,
// so the length does not leak either).
func equalTokens(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

// grantKey names one execution, or with ctrl the controller context of
// one environment operation (both are served at the operation's sequence;
// their tokens tell them apart).
type grantKey struct {
	session string
	seq     uint64
	ctrl    bool
}

// grants holds the digests of live invocation tokens, by session.
type grants struct {
	mu sync.Mutex
	m  map[string]map[grantKey]liveGrant
	n  int
}

// liveGrant is a live invocation token's digest and the secrets its
// operation carried, which calls made with it never journal.
type liveGrant struct {
	digest [32]byte
	hide   redactor
}

func newGrants() *grants { return &grants{m: map[string]map[grantKey]liveGrant{}} }

// mint makes a fresh invocation token for an execution under the lease
// epoch (see invocationToken), replacing any earlier one.
func (g *grants) mint(k grantKey, key []byte, epoch int64) string {
	var nonce [nonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		panic("envbind: no randomness: " + err.Error())
	}
	tok := invocationToken(key, k, epoch, nonce[:])
	g.mu.Lock()
	live := g.m[k.session]
	if live == nil {
		live = map[grantKey]liveGrant{}
		g.m[k.session] = live
	}
	if _, ok := live[k]; !ok {
		g.n++
	}
	live[k] = liveGrant{digest: sha256.Sum256([]byte(tok))}
	g.mu.Unlock()
	return tok
}

// hide records the secrets of the operation k belongs to (its credential
// and every token it carried), so that calls authorized by k's token have
// them removed too.
func (g *grants) hide(k grantKey, secrets redactor) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l, ok := g.m[k.session][k]; ok {
		l.hide = secrets
		g.m[k.session][k] = l
	}
}

// session answers the secrets of every operation of session that holds
// a live token: a provider knows the tokens of all the operations it was
// sent, and may quote any of them in what it sends Brain.
func (g *grants) session(session string) redactor {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out redactor
	for _, l := range g.m[session] {
		for _, v := range l.hide {
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// Invocation tokens are the base64url (unpadded) encoding of
//
//	epoch (8 bytes, big-endian) | nonce (16 random bytes) | MAC (32 bytes)
//
// where MAC is HMAC-SHA256, under a key derived from the server key, over
// "brain invocation v1\x00", the session id, 0, the operation's sequence
// (8 bytes, big-endian), 1 for a controller context (else 0), the epoch and
// the nonce. The epoch is the lease epoch the minting node held on the
// session. Every node sharing the server key can thus check that a token
// was minted for this execution and under which epoch; only the node that
// minted it knows whether it is still live.
const (
	nonceSize      = 16
	invocationSize = 8 + nonceSize + sha256.Size
)

// derivedKey is an invocation key and the server key it was derived from.
type derivedKey struct{ server, invocation []byte }

// lastInvocationKey spares a mint or check the derivation when the server
// key is the one seen last (a process has one).
var lastInvocationKey atomic.Pointer[derivedKey]

func invocationKey(key []byte) []byte {
	if d := lastInvocationKey.Load(); d != nil && bytes.Equal(d.server, key) {
		return d.invocation
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("brain invocation key v1"))
	inv := m.Sum(nil)
	lastInvocationKey.Store(&derivedKey{server: bytes.Clone(key), invocation: inv})
	return inv
}

func invocationMAC(key []byte, k grantKey, head []byte) []byte {
	m := hmac.New(sha256.New, invocationKey(key))
	m.Write([]byte("brain invocation v1\x00"))
	m.Write([]byte(k.session))
	m.Write([]byte{0})
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], k.seq)
	m.Write(n[:])
	if k.ctrl {
		m.Write([]byte{1})
	} else {
		m.Write([]byte{0})
	}
	m.Write(head)
	return m.Sum(nil)
}

func invocationToken(key []byte, k grantKey, epoch int64, nonce []byte) string {
	b := make([]byte, 0, invocationSize)
	b = binary.BigEndian.AppendUint64(b, uint64(epoch))
	b = append(b, nonce...)
	b = append(b, invocationMAC(key, k, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// parseInvocation answers the epoch of tok when it is an invocation token
// minted under key for k; ok is false for anything else.
func parseInvocation(key []byte, k grantKey, tok string) (epoch int64, ok bool) {
	if base64.RawURLEncoding.DecodedLen(len(tok)) != invocationSize {
		return 0, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	if err != nil || len(b) != invocationSize {
		return 0, false
	}
	head := b[:8+nonceSize]
	if !hmac.Equal(b[8+nonceSize:], invocationMAC(key, k, head)) {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(head[:8])), true
}

// check reports whether tok is the live token of the execution.
func (g *grants) check(k grantKey, tok string) bool {
	_, ok := g.lookup(k, tok)
	return ok
}

// lookup reports whether tok is the live token of the execution, and
// answers the secrets of its operation.
func (g *grants) lookup(k grantKey, tok string) (redactor, bool) {
	sum := sha256.Sum256([]byte(tok))
	g.mu.Lock()
	want, ok := g.m[k.session][k]
	g.mu.Unlock()
	if !ok || subtle.ConstantTimeCompare(sum[:], want.digest[:]) != 1 {
		return nil, false
	}
	return want.hide, true
}

// revoke forgets the execution's token.
func (g *grants) revoke(k grantKey) {
	g.mu.Lock()
	if live := g.m[k.session]; live != nil {
		if _, ok := live[k]; ok {
			delete(live, k)
			g.n--
		}
		if len(live) == 0 {
			delete(g.m, k.session)
		}
	}
	g.mu.Unlock()
}

// len reports how many tokens are live.
func (g *grants) len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// Grant names what an invocation token authorizes: the execution at
// Sequence of session SessionID or, with Controller, the controller
// context of the environment operation at Sequence.
type Grant struct {
	SessionID  string
	Sequence   uint64
	Controller bool

	hide redactor // the operation's credential and tokens
	live *grants  // the live tokens of the session's other operations
}

// Redact answers raw, the input of a call the grant authorized, with the
// secrets of its operation removed from its strings: the environment's
// credential and every token the operation carried, token (the one that
// authenticated the call) included, the reporter tokens of the session's
// bindings and the credentials of its declared environments when the
// operation was sent, and the credential and tokens of
// every other operation of the session whose tokens are still live. What
// a provider sends is journaled, and a provider may quote what it was
// sent.
func (g Grant) Redact(raw json.RawMessage, token string) json.RawMessage {
	hide := append(redactor{token}, g.hide...)
	if g.live != nil {
		hide = append(hide, g.live.session(g.SessionID)...)
	}
	return hide.json(raw)
}

// Authorize reports which live grant token authorizes at operation seq of
// session id: the execution's callback token, else the operation's
// context token. With Config.Epoch the token must also have been minted
// under the lease epoch this node holds on the session now: a token of an
// execution run before a failover is refused.
func (b *Binder) Authorize(id string, seq uint64, token string) (Grant, bool) {
	key, err := b.serverKey()
	if err != nil {
		return Grant{}, false
	}
	for _, ctrl := range []bool{false, true} {
		k := grantKey{id, seq, ctrl}
		epoch, ok := parseInvocation(key, k, token)
		if !ok {
			continue
		}
		hide, live := b.grants.lookup(k, token)
		if !live {
			continue
		}
		if b.cfg.Epoch != nil {
			if held, ok := b.cfg.Epoch(id); !ok || held != epoch {
				return Grant{}, false
			}
		}
		return Grant{SessionID: id, Sequence: seq, Controller: ctrl, hide: hide, live: b.grants}, true
	}
	return Grant{}, false
}

// VerifyInvocation reports whether token is an invocation token minted,
// by any node sharing the server key, for operation seq of session id
// (its execution or its controller context), and answers the lease epoch
// it was minted under. It says nothing of whether the token is still
// live: only the node that minted it knows (Authorize). It fails only
// when the server key cannot be read.
func (b *Binder) VerifyInvocation(id string, seq uint64, token string) (epoch int64, ok bool, err error) {
	key, err := b.serverKey()
	if err != nil {
		return 0, false, err
	}
	for _, ctrl := range []bool{false, true} {
		if epoch, ok := parseInvocation(key, grantKey{id, seq, ctrl}, token); ok {
			return epoch, true, nil
		}
	}
	return 0, false, nil
}

// Revoke forgets the token of g, such as when its execution turns out to
// be closed.
func (b *Binder) Revoke(g Grant) { b.grants.revoke(grantKey{g.SessionID, g.Sequence, g.Controller}) }

// AuthorizeReporter reports whether token is the reporter token of binding
// (env, sequence) of session id. It fails when the reporter key cannot be
// read.
func (b *Binder) AuthorizeReporter(id, env string, binding uint64, token string) (bool, error) {
	key, err := b.serverKey()
	if err != nil {
		return false, err
	}
	return token != "" && equalTokens(token, reporterToken(key, id, env, binding)), nil
}
